// An MCP client built on the official TypeScript SDK that connects to serve's
// /mcp over Streamable HTTP with the bearer token and exercises resources and
// tool-list changes. Prints two JSON lines on stdout:
//  1. {"templates": [uriTemplate...], "links": [uri...], "read": {"uri", "mimeType", "text"}}
//     after listing the resource templates, searching memory and reading the
//     first hit's resource_link;
//  2. {"changed": true, "tools": [...], "call": {...} | "error"} after the
//     server sent notifications/tools/list_changed and the tool named by WAIT_TOOL
//     is listed (then called with WAIT_ARGS).
// Usage: node mcp_http_resources.cjs URL TOKEN CLIENT_NAME WAIT_TOOL WAIT_ARGS_JSON.
// OH_NODE_MODULES names the node_modules folder holding @modelcontextprotocol/sdk.
const { createRequire } = require("node:module");
const path = require("node:path");
const req = createRequire(path.join(process.env.OH_NODE_MODULES, "noop.js"));
const { Client } = req("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = req("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ToolListChangedNotificationSchema } = req("@modelcontextprotocol/sdk/types.js");

async function main() {
  const [url, token, name, waitTool, waitArgs] = process.argv.slice(2);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: "1.0.0" });
  let notify;
  let changed = new Promise((resolve) => (notify = resolve));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => notify());
  await client.connect(transport);

  const { resourceTemplates } = await client.listResourceTemplates();
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const search = tools.includes("memory.search") ? "memory.search" : "memory_search";
  const res = await client.callTool({ name: search, arguments: { query: "brake quote", k: 3 } });
  const links = res.content.filter((c) => c.type === "resource_link").map((c) => c.uri);
  let read = null;
  if (links.length > 0) {
    const r = await client.readResource({ uri: links[0] });
    read = { uri: r.contents[0].uri, mimeType: r.contents[0].mimeType, text: r.contents[0].text };
  }
  process.stdout.write(JSON.stringify({ templates: resourceTemplates.map((t) => t.uriTemplate), links, read }) + "\n");

  // Wait for list_changed notifications until the awaited tool is listed.
  for (;;) {
    await changed;
    changed = new Promise((resolve) => (notify = resolve));
    const now = (await client.listTools()).tools.map((t) => t.name);
    if (!now.includes(waitTool)) continue;
    let call;
    try {
      const r = await client.callTool({ name: waitTool, arguments: JSON.parse(waitArgs) });
      call = r.isError ? "error: " + r.content.map((c) => c.text).join(" ") : r.structuredContent;
    } catch (e) {
      call = "error: " + String(e && e.message ? e.message : e);
    }
    process.stdout.write(JSON.stringify({ changed: true, tools: now, call }) + "\n");
    break;
  }
  await client.close();
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + "\n");
  process.exit(1);
});
