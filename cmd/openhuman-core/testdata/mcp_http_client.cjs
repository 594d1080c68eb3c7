// An MCP client built on the official TypeScript SDK: connects to serve's /mcp
// over Streamable HTTP with the bearer token, or spawns `openhuman-core mcp` and
// speaks stdio; lists the tools, calls each memory tool once and checks every
// result against the tool's outputSchema. Prints one JSON line:
// {"tools": [...], "calls": {"name": "ok" | "error text"}}.
// Usage: node mcp_http_client.cjs URL TOKEN CLIENT_NAME, or
// node mcp_http_client.cjs stdio BINARY CLIENT_NAME (the child gets this
// process's environment). OH_NODE_MODULES names the node_modules folder holding
// @modelcontextprotocol/sdk.
const { createRequire } = require("node:module");
const path = require("node:path");
const req = createRequire(path.join(process.env.OH_NODE_MODULES, "noop.js"));
const { Client } = req("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = req("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { StdioClientTransport } = req("@modelcontextprotocol/sdk/client/stdio.js");
const Ajv = req("ajv");

async function main() {
  const [url, token, name] = process.argv.slice(2);
  const transport =
    url === "stdio"
      ? new StdioClientTransport({ command: token, args: ["mcp"], env: process.env, stderr: "ignore" })
      : new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
        });
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  const ajv = new Ajv({ strict: false, allErrors: true });
  const calls = {};
  const call = async (tool, args) => {
    try {
      const res = await client.callTool({ name: tool, arguments: args });
      if (res.isError) throw new Error(res.content.map((c) => c.text).join(" "));
      const schema = byName[tool] && byName[tool].outputSchema;
      if (!schema) throw new Error("no outputSchema");
      const validate = ajv.compile(schema);
      if (!validate(res.structuredContent)) throw new Error("invalid against outputSchema: " + ajv.errorsText(validate.errors));
      calls[tool] = "ok";
      return res.structuredContent;
    } catch (e) {
      calls[tool] = String(e && e.message ? e.message : e);
      return null;
    }
  };
  const names = tools.map((t) => t.name);
  const n = (spec) => (names.includes(spec) ? spec : spec.replace(/[^a-zA-Z0-9_-]/g, "_"));
  const hits = await call(n("memory.search"), { query: "brake quote", k: 3 });
  await call(n("memory.recall"), { query: "the car makes a noise when stopping", k: 3 });
  const id = hits && hits.chunks && hits.chunks[0] ? hits.chunks[0].id : "0".repeat(32);
  await call(n("tree.read_chunk"), { chunk_id: id });
  await call(n("tree.browse"), { source_kinds: ["mail"], k: 5 });
  await call(n("tree.top_entities"), { kind: "people", k: 5 });
  await call(n("tree.list_sources"), { k: 5 });
  await client.close();
  process.stdout.write(JSON.stringify({ tools: names, calls }) + "\n");
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + "\n");
  process.exit(1);
});
