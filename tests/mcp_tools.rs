//! MCP tools as DO operations, against a real MCP server we did not write:
//! the protocol's reference server (npm's `@modelcontextprotocol/server-everything`,
//! installed once by `scripts/mcp-servers`), declared by the extension of
//! `tests/fixtures/mcp-tools`. A scripted being calls its tools in a
//! simulation; each act records the server's answer; the land replays with
//! the server gone (not on PATH); the audit shows what came back. Then the
//! limits: a result over `result_bytes_max`, a call over `timeout_ms`
//! (retried, then failed), and the circuit breaker open after
//! `breaker_failures_max` failures in a row; each a failure naming its
//! limit, nothing sealed.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folder holding `mcp-server-everything`, installed if need be.
pub(crate) fn servers_bin() -> String {
    let output =
        Command::new(repo().join("scripts/mcp-servers")).arg("bin").output().expect("scripts/mcp-servers runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// `seed --land LAND ARGS` with `path` as PATH: (success, stdout, stderr).
fn seed(land: &Path, arguments: &[&str], path: &str) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(land)
        .args(arguments)
        .env("PATH", path)
        .output()
        .expect("seed runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

fn with_servers(bin: &str) -> String {
    format!("{bin}:{}", std::env::var("PATH").unwrap_or_default())
}

/// The moment traces a simulation wrote.
fn traces(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .expect("a trace")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

#[test]
fn a_being_calls_a_real_mcp_servers_tools_and_the_land_replays_with_the_server_gone() {
    if !crate::opted_in("SEED_TEST_MCP", "MCP tools as DO operations against the reference server") {
        return;
    }
    let bin = servers_bin();
    let scratch = tempfile::tempdir().expect("a folder");
    let land = scratch.path().join("land");
    let fixture = repo().join("tests/fixtures/mcp-tools/world.toml").display().to_string();
    let (ok, out, err) = seed(&land, &["sim", &fixture, "--json"], &with_servers(&bin));
    assert!(ok, "{out}{err}");
    let summary: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!((summary["failures"].clone(), summary["acts"]["do"].clone()), (json!(1), json!(4)), "{summary}");
    // Round 4's echo without its message: the recorded schema requires it,
    // so the verb layer refuses it and the server is never asked.
    assert_eq!(
        summary["failureExamples"]["operation"]["reason"],
        json!("failure in decide: do echo: args.message is required"),
        "{summary}"
    );

    // Each act records the server's answer; the last, which the server refused, as an error.
    let (ok, out, err) = seed(&land, &["audit", "--json"], "/usr/bin:/bin");
    assert!(ok, "{out}{err}");
    let audit: Value = serde_json::from_str(&out).expect("JSON");
    let answers: Vec<(Value, Value, Value)> = audit["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|line| (line["tool"].clone(), line["toolCall"]["tool"].clone(), line["toolCall"]["isError"].clone()))
        .collect();
    assert_eq!(
        answers,
        vec![
            (json!("echo"), json!("echo"), json!(false)),
            (json!("add"), json!("get-sum"), json!(false)),
            (json!("echo"), json!("echo"), json!(false)),
            (json!("reference"), json!("get-resource-reference"), json!(true)),
        ]
    );
    let texts: Vec<&str> =
        audit["lines"].as_array().expect("lines").iter().filter_map(|line| line["toolCall"]["text"].as_str()).collect();
    assert_eq!(texts[..3], ["Echo: round 1", "The sum of 2 and 40 is 42.", "Echo: round 3"]);
    assert!(texts[3].contains("Invalid arguments for tool get-resource-reference"), "{texts:?}");
    // The being remembers what came back.
    let (ok, out, _) = seed(&land, &["memory", "@asker", "--json"], "/usr/bin:/bin");
    assert!(ok);
    assert!(out.contains("The sum of 2 and 40 is 42."), "{out}");

    // With the server gone: verify and replay answer from the record.
    for arguments in [&["verify"][..], &["replay", "--all"]] {
        let (ok, out, err) = seed(&land, arguments, "/usr/bin:/bin");
        assert!(ok, "{arguments:?} without the server: {out}{err}");
    }
    let (_, out, _) = seed(&land, &["replay", "--all", "--json"], "/usr/bin:/bin");
    let replayed: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!((replayed["divergences"].clone(), replayed["moments"].clone()), (json!(0), json!(4)), "{replayed}");

    // The recorded schemas are what the server says now.
    let world = repo().join("tests/fixtures/mcp-tools/world.toml").display().to_string();
    let (ok, out, err) = seed(&land, &["mcp-schemas", &world, "--check"], &with_servers(&bin));
    assert!(ok, "{out}{err}");
    assert!(out.contains("3 tools recorded") && out.contains("(unchanged)"), "{out}");
    // (Its --json is held to docs/json/mcp-schemas.json in json_schemas.)
}

#[test]
fn an_mcp_servers_limits_each_fail_the_moment_naming_the_limit_and_seal_nothing() {
    if !crate::opted_in("SEED_TEST_MCP", "MCP tools as DO operations against the reference server") {
        return;
    }
    let bin = servers_bin();
    let scratch = tempfile::tempdir().expect("a folder");
    let world = scratch.path().join("world");
    std::fs::create_dir_all(world.join("roles")).expect("roles");
    std::fs::create_dir_all(world.join("extensions/everything")).expect("extension");
    let fixture = repo().join("tests/fixtures/mcp-tools");
    let world_text = std::fs::read_to_string(fixture.join("world.toml")).expect("world");
    // The land's mcp_call_timeout_ms (above the server's 1500 ms: the
    // server's holds) and mcp_call_retries_max (below the server's one
    // retry: the land's holds, so the timed-out call is not retried).
    // Its mcp_result_bytes_max (above the server's 80: the server's holds)
    // and mcp_breaker_failures_max (below the server's 5: the land's holds).
    let config = "\n[config]\nmcp_call_timeout_ms = 60000\nmcp_call_retries_max = 0\n\
                  mcp_result_bytes_max = 1024\nmcp_breaker_failures_max = 2\n";
    std::fs::write(world.join("world.toml"), world_text.replace("ticks = 5", "ticks = 4") + config).expect("world");
    std::fs::write(
        world.join("roles/asker.toml"),
        "name = \"asker\"\ncanSee = [\"/\"]\ncanDo = [\"echo\", \"wait\"]\nscript = \"asker.rhai\"\n",
    )
    .expect("role");
    // Round 1: a short echo (answered); 2: a long one (its result over
    // result_bytes_max); 3: an operation that outlasts timeout_ms (not
    // retried: the land allows none; the breaker's second failure); 4: a short echo
    // again, refused by the open breaker.
    std::fs::write(
        world.join("roles/asker.rhai"),
        r#"let tick = face.wake.tick;
if tick == 1 || tick == 4 {
    #{ verb: "do", target: "/", action: "echo", args: #{ message: "hi" } }
} else if tick == 2 {
    #{ verb: "do", target: "/", action: "echo", args: #{ message: "a message far longer than the result may be" } }
} else {
    #{ verb: "do", target: "/", action: "wait", args: #{ duration: 5, steps: 1 } }
}
"#,
    )
    .expect("script");
    std::fs::write(
        world.join("extensions/everything/extension.toml"),
        r#"name = "everything"
version = "1.0.0"
license = "AGPL-3.0-or-later"

[[provides.mcp]]
name = "everything"
command = ["mcp-server-everything", "stdio"]
tools = { echo = "echo", trigger-long-running-operation = "wait" }
timeout_ms = 1500
retries_max = 1
result_bytes_max = 80
breaker_failures_max = 5
breaker_cooldown_ms = 600000
"#,
    )
    .expect("manifest");
    let land = scratch.path().join("land");
    let trace = scratch.path().join("moments.jsonl");
    let world_file = world.join("world.toml").display().to_string();
    let trace_file = trace.display().to_string();
    let (ok, out, err) = seed(&land, &["sim", &world_file, "--trace", &trace_file, "--json"], &with_servers(&bin));
    assert!(ok, "{out}{err}");
    let outcomes: Vec<String> =
        traces(&trace).iter().map(|line| line["outcome"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(outcomes.len(), 4, "{outcomes:?}");
    assert_eq!(outcomes[0], "act: do");
    for (outcome, needle) in [
        (&outcomes[1], "over result_bytes_max = 80"),
        (&outcomes[2], "timed out after 1500 ms (timeout_ms) (1 attempts)"),
        (&outcomes[3], "circuit breaker is open after 2 failures in a row (mcp_breaker_failures_max = 2)"),
    ] {
        assert!(outcome.starts_with("failure in decide: do "), "{outcome}");
        assert!(outcome.contains(needle), "{outcome} names {needle}");
    }
    // Only the answered call is on the reel; it replays without the server.
    let (_, out, _) = seed(&land, &["replay", "--all", "--json"], "/usr/bin:/bin");
    let replayed: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!((replayed["divergences"].clone(), replayed["moments"].clone()), (json!(0), json!(1)), "{replayed}");

    // A manifest's mistakes are named at load, each with its field.
    std::fs::write(
        world.join("extensions/everything/extension.toml"),
        "name = \"everything\"\nversion = \"1.0.0\"\nlicense = \"x\"\n\n[[provides.mcp]]\nname = \"Every Thing\"\ncommand = []\ntools = { echo = \"Echo\" }\ntimeout_ms = 0\n",
    )
    .expect("manifest");
    let (ok, out, err) = seed(&scratch.path().join("other"), &["sim", &world_file], &with_servers(&bin));
    assert!(!ok, "{out}");
    for field in
        ["provides.mcp[0].name", "provides.mcp[0].command", "provides.mcp[0].tools.echo", "provides.mcp[0].timeout_ms"]
    {
        assert!(err.contains(field), "{field} in {err}");
    }
}

/// The reference server over streamable HTTP on a free loopback port
/// (`scripts/mcp-servers http PORT`), stopped when dropped (and by itself
/// when this process's end of its stdin closes).
struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl HttpServer {
    fn start() -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("address").port();
        let child = Command::new(repo().join("scripts/mcp-servers"))
            .args(["http", &port.to_string()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("scripts/mcp-servers http starts");
        let server = HttpServer { child, port };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("the reference server did not listen on 127.0.0.1:{port} within 20 s");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copies a fixture folder (files and folders, recursively).
fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a folder");
    for entry in std::fs::read_dir(from).expect("the fixture") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("a copy");
        }
    }
}

#[test]
fn a_server_reached_by_url_answers_as_over_stdio_and_its_token_stays_out_of_the_land() {
    if !crate::opted_in("SEED_TEST_MCP", "MCP tools as DO operations against the reference server") {
        return;
    }
    let server = HttpServer::start();
    let scratch = tempfile::tempdir().expect("a folder");
    let world = scratch.path().join("world");
    copy_folder(&repo().join("tests/fixtures/mcp-tools"), &world);
    let manifest = world.join("extensions/everything/extension.toml");
    let stdio = std::fs::read_to_string(&manifest).expect("manifest");
    let by_url = |extra: &str| {
        stdio.replace("command = [\"mcp-server-everything\", \"stdio\"]", &format!("url = \"{}\"{extra}", server.url()))
    };
    // No PATH to the server's command: only its URL reaches it.
    let plain_path = "/usr/bin:/bin";
    let world_file = world.join("world.toml").display().to_string();
    let secret = "seed-test-token-8c1f3e9a";

    // A token named but not set: each call fails naming the variable, not a value.
    std::fs::write(&manifest, by_url("\nbearer_token_env = \"SEED_TEST_MCP_TOKEN\"")).expect("manifest");
    let (ok, out, err) = seed(&scratch.path().join("unset"), &["sim", &world_file, "--json"], plain_path);
    assert!(!ok, "every moment failed: {out}{err}");
    assert!(out.contains("the environment variable SEED_TEST_MCP_TOKEN (bearer_token_env) is not set"), "{out}");

    // Set: the calls are made as over stdio.
    let land = scratch.path().join("land");
    let output = Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(&land)
        .args(["sim", &world_file, "--json"])
        .env("PATH", plain_path)
        .env("SEED_TEST_MCP_TOKEN", secret)
        .output()
        .expect("seed runs");
    let (out, err) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{out}{err}");
    let summary: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!((summary["failures"].clone(), summary["acts"]["do"].clone()), (json!(1), json!(4)), "{summary}");
    assert!(!out.contains(secret) && !err.contains(secret), "the token is never printed");
    let (ok, out, err) = seed(&land, &["audit", "--json"], plain_path);
    assert!(ok, "{out}{err}");
    let audit: Value = serde_json::from_str(&out).expect("JSON");
    let texts: Vec<&str> =
        audit["lines"].as_array().expect("lines").iter().filter_map(|line| line["toolCall"]["text"].as_str()).collect();
    assert_eq!(texts[..3], ["Echo: round 1", "The sum of 2 and 40 is 42.", "Echo: round 3"]);
    for file in walk(&land) {
        let bytes = std::fs::read(&file).expect("a land file");
        assert!(
            !bytes.windows(secret.len()).any(|window| window == secret.as_bytes()),
            "{} holds the token",
            file.display()
        );
    }

    // The recorded schemas are what the server says over HTTP too.
    std::fs::write(&manifest, by_url("")).expect("manifest");
    let (ok, out, err) = seed(&land, &["mcp-schemas", &world_file, "--check"], plain_path);
    assert!(ok, "{out}{err}");

    // With the server stopped: verify and replay answer from the record.
    drop(server);
    for arguments in [&["verify"][..], &["replay", "--all"]] {
        let (ok, out, err) = seed(&land, arguments, plain_path);
        assert!(ok, "{arguments:?} with the server stopped: {out}{err}");
    }
    // And a call now fails the moment, naming the URL.
    let (ok, out, _) = seed(&scratch.path().join("stopped"), &["sim", &world_file, "--json"], plain_path);
    assert!(!ok);
    assert!(out.contains("127.0.0.1") && out.contains("did not answer the handshake"), "{out}");
}

/// Every file under `folder`.
fn walk(folder: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).expect("a folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
