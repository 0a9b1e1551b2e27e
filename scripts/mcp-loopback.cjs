// Preloaded (node --require) into a reference MCP server that
// `scripts/mcp-servers http PORT` starts for the tests: it listens on
// 127.0.0.1 only (the server itself would listen on every interface), and
// it stops by itself when its parent closes its stdin or after
// SEED_MCP_SERVER_SECONDS (default 600).
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
    const port = args[0];
    if (typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port))) {
        if (typeof args[1] !== "string") {
            args.splice(1, 0, "127.0.0.1");
        }
    }
    return listen.apply(this, args);
};
const seconds = Number(process.env.SEED_MCP_SERVER_SECONDS || 600);
setTimeout(() => process.exit(0), seconds * 1000).unref();
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
