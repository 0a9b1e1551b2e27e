"""Drives a seed land with the official Python MCP client (the `mcp` package,
which we did not write) and prints what it saw as one JSON object on stdout;
tests/mcp.rs holds the transcript to what the land must have done.

    client.py stdio SEED_BINARY LAND_DIR BEING   (SEED_MCP_TOKEN from the environment)
    client.py http URL TOKEN [legacy|modern]
    client.py refused http URL TOKEN              (what connecting gets, no scenario)

The scenario, over either transport, drives the fixture's @pilot
(tests/fixtures/mcp): list its tools; see @crew; an off-list `do`; read its
reel and its face resource; publish deck.open (its flow then makes it a
captain) and wait for the tool list to change; call the verb the new role
offers; call a tool that was never listed.
"""

import json
import sys
import warnings

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import listen
from mcp.shared.exceptions import MCPError

WAIT_FOR_CHANGE_S = 20

# A connection of an earlier protocol subscribes with resources/subscribe,
# which the SDK warns is gone from 2026-07-28 on: that is the point here.
warnings.filterwarnings("ignore", message="resources/subscribe")


def tool_result(result):
    return {"isError": bool(result.is_error), "structured": result.structured_content,
            "text": result.content[0].text if result.content else None}


def do_actions(tools):
    for tool in tools.tools:
        if tool.name == "do":
            return tool.input_schema["properties"]["action"]["enum"]
    return []


async def scenario(session, modern, notifications, tag):
    seen = {}
    matter = f"/deck#map-{tag}"
    if modern:
        await session.discover()
    else:
        await session.initialize()
    seen["protocol"] = session.protocol_version
    tools = await session.list_tools()
    seen["tools"] = [tool.name for tool in tools.tools]
    seen["doActions"] = do_actions(tools)
    seen["see"] = tool_result(await session.call_tool("see", {"address": "@crew"}))
    seen["offList"] = tool_result(await session.call_tool("do", {"action": "create-matter", "target": matter,
                                                                      "args": {"kind": "map"}}))
    seen["reel"] = tool_result(await session.call_tool("read_reel", {}))
    face = await session.read_resource("seed://beings/pilot/face")
    seen["faceResource"] = json.loads(face.contents[0].text)
    seen["resources"] = [str(resource.uri) for resource in (await session.list_resources()).resources]

    async def open_the_deck():
        return tool_result(await session.call_tool("do", {"action": "publish-signal",
                                                          "args": {"key": "deck.open", "value": True}}))

    if modern:
        async with listen(session, tools_list_changed=True,
                          resource_subscriptions=["seed://beings/pilot/reel"]) as subscription:
            seen["open"] = await open_the_deck()
            events = []
            with anyio.move_on_after(WAIT_FOR_CHANGE_S):
                async for event in subscription:
                    events.append(type(event).__name__)
                    if "ToolsListChanged" in events and "ResourceUpdated" in events:
                        break
            seen["events"] = events
    else:
        await session.subscribe_resource("seed://beings/pilot/reel")
        seen["open"] = await open_the_deck()
        with anyio.move_on_after(WAIT_FOR_CHANGE_S):
            while not ({"notifications/tools/list_changed", "notifications/resources/updated"} <= set(notifications)):
                await anyio.sleep(0.05)
        seen["events"] = sorted(set(notifications))
    seen["doActionsAfter"] = do_actions(await session.list_tools())
    seen["captain"] = tool_result(await session.call_tool("do", {"action": "create-matter", "target": matter,
                                                                 "args": {"kind": "map"}}))
    try:
        await session.call_tool("no_such_tool", {})
        seen["unknownTool"] = "answered"
    except MCPError as error:
        seen["unknownTool"] = {"code": error.error.code, "message": error.error.message}
    return seen


def handler(notifications):
    async def on_message(message):
        method = getattr(getattr(message, "root", message), "method", None)
        if method is None and isinstance(message, dict):
            method = message.get("method")
        if method is not None:
            notifications.append(method)
    return on_message


async def over_stdio(seed, land, being):
    notifications = []
    params = StdioServerParameters(command=seed, args=["--land", land, "mcp", "--being", being],
                                   env=None)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=handler(notifications)) as session:
            return await scenario(session, False, notifications, "stdio")


async def over_http(url, token, mode):
    notifications = []
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, message_handler=handler(notifications)) as session:
                return await scenario(session, mode == "modern", notifications, mode)


async def refused_http(url, token):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    notifications = []
    try:
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write, message_handler=handler(notifications)) as session:
                    await session.initialize()
                    return {"connected": True}
    except BaseException as error:  # the client raises an exception group naming the HTTP status
        return {"connected": False, "error": repr(error)[:2000]}


def main():
    args = sys.argv[1:]
    if args[0] == "stdio":
        seen = anyio.run(over_stdio, args[1], args[2], args[3])
    elif args[0] == "http":
        seen = anyio.run(over_http, args[1], args[2], args[3] if len(args) > 3 else "legacy")
    elif args[0] == "refused":
        seen = anyio.run(refused_http, args[2], args[3] if len(args) > 3 else "")
    else:
        raise SystemExit(f"unknown mode {args[0]!r}")
    print(json.dumps(seen, default=str))


if __name__ == "__main__":
    main()
