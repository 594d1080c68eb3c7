// A small JSON reader and writer for openhuman-core tools: one Value class with a
// kind, parsed straight from the UTF-8 bytes the host wrote, written back as
// compact text. No compiler transform and no dependency: AssemblyScript has no
// reflection, so a typed decoder needs a transform (json-as) tied to compiler
// versions, while a value tree is small and reads any argument shape.
//
// Numbers are f64 (integers are exact up to 2^53: every timestamp and count the
// host sends). parse() refuses trailing bytes, bad escapes, lone surrogates and
// nesting deeper than MAX_DEPTH, naming the byte offset.

export const MAX_DEPTH = 128;

export const enum Kind {
  Null = 0,
  Bool = 1,
  Number = 2,
  String = 3,
  Array = 4,
  Object = 5,
}

export class Value {
  kind: Kind = Kind.Null;
  b: bool = false;
  n: f64 = 0;
  s: string = "";
  items: Array<Value> = [];
  keys: Array<string> = [];

  static null(): Value {
    return new Value();
  }
  static bool(b: bool): Value {
    const v = new Value();
    v.kind = Kind.Bool;
    v.b = b;
    return v;
  }
  static number(n: f64): Value {
    const v = new Value();
    v.kind = Kind.Number;
    v.n = n;
    return v;
  }
  static str(s: string): Value {
    const v = new Value();
    v.kind = Kind.String;
    v.s = s;
    return v;
  }
  static array(items: Array<Value> = []): Value {
    const v = new Value();
    v.kind = Kind.Array;
    v.items = items;
    return v;
  }
  /** An empty object; add members with set(). */
  static object(): Value {
    const v = new Value();
    v.kind = Kind.Object;
    return v;
  }

  /** Sets member key of an object (replacing an existing one); returns this. */
  set(key: string, v: Value): Value {
    const i = this.keys.indexOf(key);
    if (i >= 0) {
      this.items[i] = v;
    } else {
      this.keys.push(key);
      this.items.push(v);
    }
    return this;
  }
  setStr(key: string, s: string): Value {
    return this.set(key, Value.str(s));
  }
  setNum(key: string, n: f64): Value {
    return this.set(key, Value.number(n));
  }
  setBool(key: string, b: bool): Value {
    return this.set(key, Value.bool(b));
  }

  /** Member key of an object, or null (also for a non-object). */
  get(key: string): Value | null {
    if (this.kind != Kind.Object) return null;
    const i = this.keys.indexOf(key);
    return i < 0 ? null : this.items[i];
  }
  has(key: string): bool {
    const v = this.get(key);
    return v != null && v.kind != Kind.Null;
  }
  /** The string member key, or "" when absent or not a string. */
  strOf(key: string): string {
    const v = this.get(key);
    return v != null && v.kind == Kind.String ? v.s : "";
  }
  /** The number member key, or 0. */
  numOf(key: string): f64 {
    const v = this.get(key);
    return v != null && v.kind == Kind.Number ? v.n : 0;
  }
  /** The array member key's items, or an empty array. */
  arrayOf(key: string): Array<Value> {
    const v = this.get(key);
    return v != null && v.kind == Kind.Array ? v.items : [];
  }
  get isNull(): bool {
    return this.kind == Kind.Null;
  }
  /** The JSON type name, as the built-in tools' messages say it: null, bool,
   * number, string, array, object. */
  typeName(): string {
    switch (this.kind) {
      case Kind.Null: return "null";
      case Kind.Bool: return "bool";
      case Kind.Number: return "number";
      case Kind.String: return "string";
      case Kind.Array: return "array";
    }
    return "object";
  }

  /** Compact JSON text. */
  toJSON(): string {
    const parts = new Array<string>();
    this.write(parts);
    return parts.join("");
  }

  write(out: Array<string>): void {
    switch (this.kind) {
      case Kind.Null: out.push("null"); break;
      case Kind.Bool: out.push(this.b ? "true" : "false"); break;
      case Kind.Number: out.push(numberText(this.n)); break;
      case Kind.String: out.push(quote(this.s)); break;
      case Kind.Array: {
        out.push("[");
        for (let i = 0; i < this.items.length; i++) {
          if (i > 0) out.push(",");
          this.items[i].write(out);
        }
        out.push("]");
        break;
      }
      default: {
        out.push("{");
        for (let i = 0; i < this.keys.length; i++) {
          if (i > 0) out.push(",");
          out.push(quote(this.keys[i]));
          out.push(":");
          this.items[i].write(out);
        }
        out.push("}");
      }
    }
  }
}

/** Integral values within ±2^53 as integers; NaN and infinities as null. */
export function numberText(n: f64): string {
  if (!isFinite(n)) return "null";
  if (Math.floor(n) == n && Math.abs(n) < 9007199254740992.0) return (<i64>n).toString();
  return n.toString();
}

const HEX = "0123456789abcdef";

/** s as a JSON string literal. */
export function quote(s: string): string {
  let out = "\"";
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc = "";
    if (c == 0x22) esc = "\\\"";
    else if (c == 0x5c) esc = "\\\\";
    else if (c == 0x0a) esc = "\\n";
    else if (c == 0x0d) esc = "\\r";
    else if (c == 0x09) esc = "\\t";
    else if (c < 0x20) esc = "\\u00" + HEX.charAt(c >> 4) + HEX.charAt(c & 15);
    else continue;
    out += s.substring(run, i) + esc;
    run = i + 1;
  }
  return out + s.substring(run) + "\"";
}

/** Why a document did not parse. */
export class ParseError {
  constructor(public offset: i32, public problem: string) {}
  message(): string {
    return "invalid JSON at byte " + this.offset.toString() + ": " + this.problem;
  }
}

/** The outcome of parse: a value, or the error. */
export class Parsed {
  constructor(public value: Value | null, public error: ParseError | null) {}
}

/** Parses the UTF-8 JSON text at ptr..ptr+len. */
export function parseBytes(ptr: usize, len: i32): Parsed {
  const p = new Parser(ptr, len);
  p.ws();
  const v = p.value(0);
  if (p.error == null) {
    p.ws();
    if (p.i != len) p.fail("unexpected bytes after the value");
  }
  return p.error != null ? new Parsed(null, p.error) : new Parsed(v, null);
}

/** Parses a JSON text. */
export function parse(text: string): Parsed {
  const buf = String.UTF8.encode(text);
  return parseBytes(changetype<usize>(buf), buf.byteLength);
}

class Parser {
  i: i32 = 0;
  error: ParseError | null = null;
  constructor(public p: usize, public n: i32) {}

  at(k: i32): i32 {
    return k < this.n ? <i32>load<u8>(this.p + <usize>k) : -1;
  }
  fail(problem: string): Value {
    if (this.error == null) this.error = new ParseError(this.i, problem);
    return Value.null();
  }
  ws(): void {
    while (true) {
      const c = this.at(this.i);
      if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) return;
      this.i++;
    }
  }
  lit(word: string, v: Value): Value {
    for (let k = 0; k < word.length; k++) {
      if (this.at(this.i + k) != word.charCodeAt(k)) return this.fail("expected a value");
    }
    this.i += word.length;
    return v;
  }

  value(depth: i32): Value {
    if (depth > MAX_DEPTH) return this.fail("nested too deeply");
    const c = this.at(this.i);
    if (c == -1) return this.fail("unexpected end of input");
    if (c == 0x6e) return this.lit("null", Value.null());
    if (c == 0x74) return this.lit("true", Value.bool(true));
    if (c == 0x66) return this.lit("false", Value.bool(false));
    if (c == 0x22) {
      const s = this.string();
      return this.error != null ? Value.null() : Value.str(s);
    }
    if (c == 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    if (c == 0x5b) {
      this.i++;
      const a = Value.array();
      this.ws();
      if (this.at(this.i) == 0x5d) {
        this.i++;
        return a;
      }
      while (true) {
        this.ws();
        a.items.push(this.value(depth + 1));
        if (this.error != null) return a;
        this.ws();
        const d = this.at(this.i);
        if (d == 0x2c) this.i++;
        else if (d == 0x5d) {
          this.i++;
          return a;
        } else return this.fail("expected ',' or ']' in an array");
      }
    }
    if (c == 0x7b) {
      this.i++;
      const o = Value.object();
      this.ws();
      if (this.at(this.i) == 0x7d) {
        this.i++;
        return o;
      }
      while (true) {
        this.ws();
        if (this.at(this.i) != 0x22) return this.fail("expected a member name (a string)");
        const k = this.string();
        if (this.error != null) return o;
        this.ws();
        if (this.at(this.i) != 0x3a) return this.fail("expected ':' after a member name");
        this.i++;
        this.ws();
        const v = this.value(depth + 1);
        if (this.error != null) return o;
        o.keys.push(k);
        o.items.push(v);
        this.ws();
        const d = this.at(this.i);
        if (d == 0x2c) this.i++;
        else if (d == 0x7d) {
          this.i++;
          return o;
        } else return this.fail("expected ',' or '}' in an object");
      }
    }
    return this.fail("expected a value");
  }

  digits(): i32 {
    const s = this.i;
    while (true) {
      const c = this.at(this.i);
      if (c < 0x30 || c > 0x39) break;
      this.i++;
    }
    return this.i - s;
  }

  number(): Value {
    const start = this.i;
    if (this.at(this.i) == 0x2d) this.i++;
    const intStart = this.i;
    const n = this.digits();
    if (n == 0 || (n > 1 && this.at(intStart) == 0x30)) return this.fail("malformed number");
    if (this.at(this.i) == 0x2e) {
      this.i++;
      if (this.digits() == 0) return this.fail("malformed number");
    }
    const e = this.at(this.i);
    if (e == 0x65 || e == 0x45) {
      this.i++;
      const s = this.at(this.i);
      if (s == 0x2b || s == 0x2d) this.i++;
      if (this.digits() == 0) return this.fail("malformed number");
    }
    const text = String.UTF8.decodeUnsafe(this.p + <usize>start, <usize>(this.i - start));
    const f = parseFloat(text);
    if (!isFinite(f)) {
      this.i = start;
      return this.fail("number out of range");
    }
    return Value.number(f);
  }

  hex4(): i32 {
    let v = 0;
    for (let k = 0; k < 4; k++) {
      const c = this.at(this.i + k);
      let d = -1;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
      if (d < 0) {
        this.fail("bad \\u escape");
        return -1;
      }
      v = v * 16 + d;
    }
    this.i += 4;
    return v;
  }

  string(): string {
    this.i++; // the opening quote
    let out = "";
    while (true) {
      const run = this.i;
      let c = this.at(this.i);
      while (c >= 0x20 && c != 0x22 && c != 0x5c) {
        this.i++;
        c = this.at(this.i);
      }
      if (this.i > run) out += String.UTF8.decodeUnsafe(this.p + <usize>run, <usize>(this.i - run));
      if (c == -1) {
        this.fail("unterminated string");
        return "";
      }
      if (c == 0x22) {
        this.i++;
        return out;
      }
      if (c < 0x20) {
        this.fail("control character in a string");
        return "";
      }
      // A backslash.
      this.i++;
      const e = this.at(this.i);
      this.i++;
      if (e == 0x22) out += "\"";
      else if (e == 0x5c) out += "\\";
      else if (e == 0x2f) out += "/";
      else if (e == 0x62) out += "\b";
      else if (e == 0x66) out += "\f";
      else if (e == 0x6e) out += "\n";
      else if (e == 0x72) out += "\r";
      else if (e == 0x74) out += "\t";
      else if (e == 0x75) {
        const hi = this.hex4();
        if (hi < 0) return "";
        if (hi >= 0xdc00 && hi < 0xe000) {
          this.fail("lone surrogate in a \\u escape");
          return "";
        }
        if (hi >= 0xd800 && hi < 0xdc00) {
          if (this.at(this.i) != 0x5c || this.at(this.i + 1) != 0x75) {
            this.fail("lone surrogate in a \\u escape");
            return "";
          }
          this.i += 2;
          const lo = this.hex4();
          if (lo < 0) return "";
          if (lo < 0xdc00 || lo >= 0xe000) {
            this.fail("lone surrogate in a \\u escape");
            return "";
          }
          out += String.fromCharCode(hi, lo);
        } else {
          out += String.fromCharCode(hi);
        }
      } else {
        this.i--;
        this.fail("bad escape in a string");
        return "";
      }
    }
  }
}
