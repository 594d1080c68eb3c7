//! A small JSON reader and writer: enough for tool arguments, host replies and
//! results, with no dependencies.
//!
//! [`Value`] is a parsed document; objects keep their members in order (a
//! `Vec`, searched linearly: tool arguments and host replies are small). Numbers
//! without a fraction or exponent that fit an `i64` parse as [`Value::Int`], others
//! as [`Value::Float`]. [`parse`] refuses invalid UTF-8, trailing bytes, lone
//! surrogates and nesting deeper than [`MAX_DEPTH`], naming the byte offset.

use std::string::String;
use std::vec::Vec;

/// How deep arrays and objects may nest; deeper input is refused instead of
/// exhausting the stack.
pub const MAX_DEPTH: usize = 128;

/// A JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

/// Why a document did not parse, and where (byte offset).
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    pub offset: usize,
    pub problem: &'static str,
}

impl ParseError {
    /// The error as one sentence: "invalid JSON at byte N: problem".
    pub fn message(&self) -> String {
        let mut s = String::from("invalid JSON at byte ");
        push_u64(&mut s, self.offset as u64);
        s.push_str(": ");
        s.push_str(self.problem);
        s
    }
}

/// Parses one JSON document.
pub fn parse(input: &[u8]) -> Result<Value, ParseError> {
    let mut p = Parser { b: input, i: 0 };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.b.len() {
        return Err(p.err("unexpected bytes after the value"));
    }
    Ok(v)
}

impl Value {
    /// An object from (key, value) pairs.
    pub fn object<K: Into<String>, I: IntoIterator<Item = (K, Value)>>(members: I) -> Value {
        Value::Object(members.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// The member `key` of an object; None for a missing key or a non-object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Sets member `key` of an object (replacing an existing one); a no-op on
    /// other values. Returns self, for chaining.
    pub fn set<K: Into<String>>(mut self, key: K, v: Value) -> Value {
        if let Value::Object(m) = &mut self {
            let key = key.into();
            match m.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = v,
                None => m.push((key, v)),
            }
        }
        self
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// An integer, or a float with no fractional part within the i64 range.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(n) => Some(n),
            Value::Float(f) if f.fract() == 0.0 && f >= -9.2e18 && f <= 9.2e18 => Some(f as i64),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(n) => Some(n as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Vec<(String, Value)>> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The JSON type name, as the built-in tools' messages say it: null, bool,
    /// number, string, array, object.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::Float(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// The string member `key`, or "" when absent or not a string.
    pub fn str_of(&self, key: &str) -> &str {
        self.get(key).and_then(Value::as_str).unwrap_or("")
    }

    /// The integer member `key`, or 0 when absent or not an integer.
    pub fn int_of(&self, key: &str) -> i64 {
        self.get(key).and_then(Value::as_i64).unwrap_or(0)
    }

    /// The array member `key`, or an empty slice.
    pub fn array_of(&self, key: &str) -> &[Value] {
        match self.get(key) {
            Some(Value::Array(a)) => a,
            _ => &[],
        }
    }

    /// Compact JSON text.
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    /// Appends compact JSON text to out.
    pub fn write(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(true) => out.push_str("true"),
            Value::Bool(false) => out.push_str("false"),
            Value::Int(n) => push_i64(out, *n),
            Value::Float(f) => push_f64(out, *f),
            Value::String(s) => push_string(out, s),
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Value::Object(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    push_string(out, k);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.into())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}
impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}
impl From<i32> for Value {
    fn from(n: i32) -> Value {
        Value::Int(n as i64)
    }
}
impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::Int(n as i64)
    }
}
impl From<usize> for Value {
    fn from(n: usize) -> Value {
        Value::Int(n as i64)
    }
}
impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::Float(f)
    }
}
impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Value {
        Value::Array(v.into_iter().map(Into::into).collect())
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        match v {
            Some(v) => v.into(),
            None => Value::Null,
        }
    }
}

/// Appends s as a JSON string literal (quotes, escapes) to out.
pub fn push_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 15] as char);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends the decimal digits of n.
pub fn push_i64(out: &mut String, n: i64) {
    if n < 0 {
        out.push('-');
    }
    push_u64(out, n.unsigned_abs());
}

fn push_u64(out: &mut String, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &buf[i..] {
        out.push(d as char);
    }
}

/// Appends a float: integral values within ±2^53 as integers, others with up to
/// nine decimals (JSON has no NaN or infinity: they become null).
fn push_f64(out: &mut String, f: f64) {
    if !f.is_finite() {
        out.push_str("null");
        return;
    }
    if f.fract() == 0.0 && f.abs() < 9007199254740992.0 {
        push_i64(out, f as i64);
        return;
    }
    if f.abs() >= 1e15 || f.abs() < 1e-6 {
        // Outside the plain-decimal range: scale to an exponent form.
        let mut e = 0i64;
        let mut m = f.abs();
        while m >= 10.0 {
            m /= 10.0;
            e += 1;
        }
        while m < 1.0 {
            m *= 10.0;
            e -= 1;
        }
        if f < 0.0 {
            out.push('-');
        }
        push_fixed(out, m);
        out.push('e');
        push_i64(out, e);
        return;
    }
    if f < 0.0 {
        out.push('-');
    }
    push_fixed(out, f.abs());
}

// push_fixed writes a non-negative finite f with up to nine decimals, trailing
// zeros removed.
fn push_fixed(out: &mut String, f: f64) {
    let scaled = (f * 1e9 + 0.5) as u64;
    let (int, mut frac) = (scaled / 1_000_000_000, scaled % 1_000_000_000);
    push_u64(out, int);
    if frac == 0 {
        return;
    }
    out.push('.');
    let mut digits = 9;
    while frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    let mut buf = [b'0'; 9];
    let mut i = digits;
    while i > 0 {
        i -= 1;
        buf[i] = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    for &d in &buf[..digits] {
        out.push(d as char);
    }
}

// parse_f64 reads a JSON number already checked for syntax: the first 19
// significant digits times a power of ten. It is within a few ulps of the nearest
// double (core's exact parser would add ~10 KB to every module); arguments that
// need exact decimals should be passed as strings.
fn parse_f64(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    let (mut i, neg) = if b.first() == Some(&b'-') { (1, true) } else { (0, false) };
    let (mut mant, mut digits, mut exp) = (0u64, 0u32, 0i32);
    let mut frac = false;
    while i < b.len() {
        match b[i] {
            b'0'..=b'9' => {
                if digits < 19 {
                    mant = mant * 10 + (b[i] - b'0') as u64;
                    if mant > 0 {
                        digits += 1;
                    }
                    if frac {
                        exp -= 1;
                    }
                } else if !frac {
                    exp += 1;
                }
            }
            b'.' => frac = true,
            _ => break,
        }
        i += 1;
    }
    if i < b.len() {
        let mut e = 0i32;
        let mut j = i + 1;
        let eneg = b.get(j) == Some(&b'-');
        if matches!(b.get(j), Some(b'+') | Some(b'-')) {
            j += 1;
        }
        while j < b.len() {
            e = e.saturating_mul(10).saturating_add((b[j] - b'0') as i32);
            j += 1;
        }
        exp = exp.saturating_add(if eneg { -e } else { e });
    }
    let mut f = mant as f64;
    if exp > 308 + 19 {
        return None;
    }
    if exp < -340 {
        f = 0.0;
    } else if exp < 0 {
        // Divide by an exact power of ten where possible: fewer rounding steps.
        let mut e = -exp;
        while e > 22 {
            f /= 1e22;
            e -= 22;
        }
        f /= pow10(e);
    } else {
        let mut e = exp;
        while e > 22 {
            f *= 1e22;
            e -= 22;
        }
        f *= pow10(e);
    }
    Some(if neg { -f } else { f })
}

// pow10 is 10^e for 0 <= e <= 22, exactly representable.
fn pow10(e: i32) -> f64 {
    let mut p = 1.0;
    for _ in 0..e {
        p *= 10.0;
    }
    p
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, problem: &'static str) -> ParseError {
        ParseError { offset: self.i, problem }
    }

    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn lit(&mut self, word: &'static [u8], v: Value) -> Result<Value, ParseError> {
        if self.b.len() - self.i >= word.len() && &self.b[self.i..self.i + word.len()] == word {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err("expected a value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        match self.b.get(self.i) {
            None => Err(self.err("unexpected end of input")),
            Some(b'n') => self.lit(b"null", Value::Null),
            Some(b't') => self.lit(b"true", Value::Bool(true)),
            Some(b'f') => self.lit(b"false", Value::Bool(false)),
            Some(b'"') => self.string().map(Value::String),
            Some(b'[') => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Value::Array(a));
                }
                loop {
                    self.ws();
                    a.push(self.value(depth + 1)?);
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::Array(a));
                        }
                        _ => return Err(self.err("expected ',' or ']' in an array")),
                    }
                }
            }
            Some(b'{') => {
                self.i += 1;
                let mut m = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Value::Object(m));
                }
                loop {
                    self.ws();
                    if self.b.get(self.i) != Some(&b'"') {
                        return Err(self.err("expected a member name (a string)"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.b.get(self.i) != Some(&b':') {
                        return Err(self.err("expected ':' after a member name"));
                    }
                    self.i += 1;
                    self.ws();
                    let v = self.value(depth + 1)?;
                    m.push((k, v));
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Value::Object(m));
                        }
                        _ => return Err(self.err("expected ',' or '}' in an object")),
                    }
                }
            }
            Some(b'-') | Some(b'0'..=b'9') => self.number(),
            _ => Err(self.err("expected a value")),
        }
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        let digits = |p: &mut Parser| {
            let s = p.i;
            while p.i < p.b.len() && p.b[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i - s
        };
        let int_start = self.i;
        let n = digits(self);
        if n == 0 || (n > 1 && self.b[int_start] == b'0') {
            return Err(ParseError { offset: start, problem: "malformed number" });
        }
        let mut float = false;
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            float = true;
            if digits(self) == 0 {
                return Err(ParseError { offset: start, problem: "malformed number" });
            }
        }
        if matches!(self.b.get(self.i), Some(b'e') | Some(b'E')) {
            self.i += 1;
            float = true;
            if matches!(self.b.get(self.i), Some(b'+') | Some(b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return Err(ParseError { offset: start, problem: "malformed number" });
            }
        }
        // The bytes are ASCII digits and signs: valid UTF-8.
        let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("");
        if !float {
            if let Ok(n) = text.parse::<i64>() {
                return Ok(Value::Int(n));
            }
        }
        match parse_f64(text) {
            Some(f) if f.is_finite() => Ok(Value::Float(f)),
            _ => Err(ParseError { offset: start, problem: "number out of range" }),
        }
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        if self.b.len() - self.i < 4 {
            return Err(self.err("short \\u escape"));
        }
        let mut v = 0u32;
        for k in 0..4 {
            let c = self.b[self.i + k];
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(self.err("bad \\u escape")),
            };
            v = v * 16 + d as u32;
        }
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.i += 1; // the opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            let run = self.i;
            while self.i < self.b.len() && self.b[self.i] != b'"' && self.b[self.i] != b'\\' && self.b[self.i] >= 0x20 {
                self.i += 1;
            }
            out.extend_from_slice(&self.b[run..self.i]);
            match self.b.get(self.i) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.i += 1;
                    return String::from_utf8(out).map_err(|e| ParseError {
                        offset: run + e.utf8_error().valid_up_to(),
                        problem: "invalid UTF-8 in a string",
                    });
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = match self.b.get(self.i) {
                        Some(c) => *c,
                        None => return Err(self.err("unterminated string")),
                    };
                    self.i += 1;
                    let ch = match c {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                if self.b.get(self.i) != Some(&b'\\') || self.b.get(self.i + 1) != Some(&b'u') {
                                    return Err(self.err("lone surrogate in a \\u escape"));
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("lone surrogate in a \\u escape"));
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            match char::from_u32(cp) {
                                Some(ch) => ch,
                                None => return Err(self.err("lone surrogate in a \\u escape")),
                            }
                        }
                        _ => return Err(self.err("bad escape in a string")),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                Some(_) => return Err(self.err("control character in a string")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(s: &str) -> String {
        parse(s.as_bytes()).map(|v| v.to_json()).unwrap_or_else(|e| e.message())
    }

    #[test]
    fn round_trips() {
        assert_eq!(round(r#" {"a" : [1, -2, 3.5, true, false, null, {}, []], "b":"x"} "#), r#"{"a":[1,-2,3.5,true,false,null,{},[]],"b":"x"}"#);
        assert_eq!(round(r#""tab\t quote\" back\\ nl\n ctl\u0001 \ud83d\ude00 \u00e9 /\/""#), "\"tab\\t quote\\\" back\\\\ nl\\n ctl\\u0001 😀 é //\"");
        assert_eq!(round("9223372036854775807"), "9223372036854775807");
        assert_eq!(round("-0.25"), "-0.25");
        assert_eq!(round("1e3"), "1000");
        assert_eq!(round("1.5e-7"), "1.5e-7");
        assert_eq!(round("123456789.125"), "123456789.125");
    }

    #[test]
    fn refuses_bad_input_naming_the_offset() {
        for (input, offset, problem) in [
            ("", 0, "unexpected end of input"),
            ("[1,]", 3, "expected a value"),
            ("{\"a\" 1}", 5, "expected ':' after a member name"),
            ("01", 0, "malformed number"),
            ("1.", 0, "malformed number"),
            ("\"\\ud800\"", 7, "lone surrogate in a \\u escape"),
            ("\"\\udc00\"", 7, "lone surrogate in a \\u escape"),
            ("\"a\u{1}\"", 2, "control character in a string"),
            ("\"\\x\"", 3, "bad escape in a string"),
            ("1 2", 2, "unexpected bytes after the value"),
            ("1e999", 0, "number out of range"),
        ] {
            let e = parse(input.as_bytes()).unwrap_err();
            assert_eq!((e.offset, e.problem), (offset, problem), "input {:?}", input);
        }
        let deep = "[".repeat(MAX_DEPTH + 2);
        assert_eq!(parse(deep.as_bytes()).unwrap_err().problem, "nested too deeply");
        assert_eq!(parse(b"\"\xff\"").unwrap_err().problem, "invalid UTF-8 in a string");
    }

    #[test]
    fn floats_are_close() {
        for s in ["0.1", "3.141592653589793", "2.5e-300", "1.7976931348623157e308", "123.456e5"] {
            let want: f64 = s.parse().unwrap();
            let got = parse(s.as_bytes()).unwrap().as_f64().unwrap();
            assert!(((got - want) / want).abs() < 1e-14, "{}: {} vs {}", s, got, want);
        }
    }
}
