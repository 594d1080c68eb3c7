// threads-per-year (AssemblyScript): how many e-mail threads the memory tree
// holds per year of their most recent message.
import { Request, Result, Value, memory, serve } from "../../../sdk/assemblyscript/assembly/index";
export { oh_alloc } from "../../../sdk/assemblyscript/assembly/index";

function handle(r: Request): Result<Value> {
  const args = r.args([]);
  if (args.failed) return Result.err<Value>(args.error!);
  const counts = new Map<i32, i32>();
  let total = 0;
  const q = new memory.SourcesQuery();
  q.kinds = ["email"];
  q.k = 50;
  while (true) {
    const page = memory.listSources(q);
    if (page.failed) return Result.err<Value>(page.error!);
    const sources = page.val.sources;
    for (let i = 0; i < sources.length; i++) {
      const y = new Date(<i64>sources[i].mostRecentMs).getUTCFullYear();
      counts.set(y, counts.has(y) ? counts.get(y) + 1 : 1);
      total++;
    }
    if (page.val.next == 0) break;
    q.offset = <i32>page.val.next;
  }
  const keys = counts.keys().sort((a: i32, b: i32): i32 => a - b);
  const years = Value.array();
  for (let i = 0; i < keys.length; i++) {
    years.items.push(Value.object().setNum("year", keys[i]).setNum("threads", counts.get(keys[i])));
  }
  return Result.ok<Value>(Value.object().set("years", years).setNum("threads", total));
}

export function oh_call(ptr: usize, len: i32): i64 {
  return serve(ptr, len, handle);
}
