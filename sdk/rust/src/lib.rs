//! The openhuman-core guest SDK for Rust: write an MCP tool as a WebAssembly
//! module for the "openhuman/1" ABI (sdk/openhuman.h describes it in full).
//!
//! ```ignore
//! use openhuman::{json::Value, memory, Request, Result};
//!
//! fn handle(r: &Request) -> Result<Value> {
//!     let args = r.args(&["name"])?;               // unknown keys are refused
//!     let name = args.optional_str("name")?.unwrap_or("there");
//!     let sources = memory::list_sources(&memory::SourcesQuery { k: 1, ..Default::default() })?;
//!     Ok(Value::object([("greeting", format!("Hello, {}!", name).into()), ("sources", sources.total.into())]))
//! }
//!
//! openhuman::export!(handle);
//! ```
//!
//! [`export!`] defines the module's `oh_alloc` and `oh_call` exports. The handler
//! returns a result object, or an [`Error`] that the client sees as an `isError`
//! result with its message. Host functions are in [`memory`] (capability
//! `memory.read`) and [`searxng`] (`web.searxng`); only those a module calls
//! become its imports, and the host refuses imports its manifest does not request.
//!
//! Build for `wasm32-unknown-unknown` (no WASI: the module's only imports are
//! the host functions it calls) with `cargo build --offline --release`.
//! A panic aborts: the call fails as `internal` and the host discards the instance.

pub mod json;
pub mod memory;
pub mod searxng;

use json::Value;

/// The ABI this SDK speaks (the manifest's `abi`).
pub const ABI_VERSION: &str = "openhuman/1";

/// A tool's failure: the client sees `message` as an `isError` result.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    /// invalid_params, not_found, unavailable or internal.
    pub code: String,
    pub message: String,
}

/// The result of a handler or a host function.
pub type Result<T> = core::result::Result<T, Error>;

impl Error {
    pub fn new(code: &str, message: impl Into<String>) -> Error {
        Error { code: code.into(), message: message.into() }
    }
    /// The caller's arguments are wrong: say which and why.
    pub fn invalid_params(message: impl Into<String>) -> Error {
        Error::new("invalid_params", message)
    }
    pub fn not_found(message: impl Into<String>) -> Error {
        Error::new("not_found", message)
    }
    /// A dependency (the memory tree, SearXNG) failed.
    pub fn unavailable(message: impl Into<String>) -> Error {
        Error::new("unavailable", message)
    }
    /// A bug in the tool.
    pub fn internal(message: impl Into<String>) -> Error {
        Error::new("internal", message)
    }
    fn to_value(&self) -> Value {
        Value::object([("code", self.code.as_str().into()), ("message", self.message.as_str().into())])
    }
}

/// One call of the tool, as the host passed it to `oh_call`.
#[derive(Clone, Debug)]
pub struct Request {
    pub tool: String,
    /// The caller's arguments: an object, `{}` when absent.
    pub arguments: Value,
    /// The client's provenance label, e.g. "mcp:claude-ai".
    pub client: String,
    pub request_id: String,
}

impl Request {
    /// The arguments, refusing keys outside `allowed` with the shared message
    /// ("unexpected argument `x`").
    pub fn args(&self, allowed: &[&str]) -> Result<Args<'_>> {
        let members = match &self.arguments {
            Value::Object(m) => m,
            other => {
                return Err(Error::invalid_params(concat3("arguments must be an object, got ", other.type_name(), "")));
            }
        };
        let mut unknown = String::new();
        for (k, _) in members {
            if !allowed.contains(&k.as_str()) {
                if !unknown.is_empty() {
                    unknown.push_str(", ");
                }
                unknown.push('`');
                unknown.push_str(k);
                unknown.push('`');
            }
        }
        if !unknown.is_empty() {
            return Err(Error::invalid_params(concat3("unexpected argument ", &unknown, "")));
        }
        Ok(Args { v: &self.arguments })
    }
}

/// Checked access to a call's arguments, with the messages the built-in tools use.
pub struct Args<'a> {
    v: &'a Value,
}

impl<'a> Args<'a> {
    /// The raw value of `name`, if present and not null.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.v.get(name).filter(|v| !v.is_null())
    }

    /// A string argument that must be present and not empty (trimmed).
    pub fn required_str(&self, name: &str) -> Result<&'a str> {
        match self.get(name) {
            None => Err(Error::invalid_params(concat3("missing required argument `", name, "`"))),
            Some(Value::String(s)) if s.trim().is_empty() => Err(Error::invalid_params(concat3("argument `", name, "` must not be empty"))),
            Some(Value::String(s)) => Ok(s.trim()),
            Some(_) => Err(Error::invalid_params(concat3("argument `", name, "` must be a string"))),
        }
    }

    /// A string argument that may be absent; present, it must not be empty.
    pub fn optional_str(&self, name: &str) -> Result<Option<&'a str>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => {
                Err(Error::invalid_params(concat3("argument `", name, "` must not be empty when provided")))
            }
            Some(Value::String(s)) => Ok(Some(s.trim())),
            Some(_) => Err(Error::invalid_params(concat3("argument `", name, "` must be a string"))),
        }
    }

    /// An optional positive integer at most `max`.
    pub fn optional_int(&self, name: &str, max: i64) -> Result<Option<i64>> {
        let v = match self.get(name) {
            None => return Ok(None),
            Some(v) => v,
        };
        match v.as_i64() {
            None => Err(Error::invalid_params(concat3("argument `", name, "` must be a positive integer"))),
            Some(n) if n <= 0 => Err(Error::invalid_params(concat3("argument `", name, "` must be greater than zero"))),
            Some(n) if n > max => {
                let mut m = concat3("argument `", name, "` must not exceed ");
                json::push_i64(&mut m, max);
                m.push_str(" (got ");
                json::push_i64(&mut m, n);
                m.push(')');
                Err(Error::invalid_params(m))
            }
            Some(n) => Ok(Some(n)),
        }
    }

    /// An array of strings, trimmed, blank ones dropped (empty when absent), of
    /// at most `max_items` elements (the input schema's maxItems).
    pub fn string_array(&self, name: &str, max_items: usize) -> Result<Vec<&'a str>> {
        let items = match self.get(name) {
            None => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(Error::invalid_params([&concat3("argument `", name, "` must be an array of strings, got "), other.type_name()].concat()));
            }
        };
        if items.len() > max_items {
            let mut m = concat3("argument `", name, "` has ");
            json::push_i64(&mut m, items.len() as i64);
            m.push_str(" items; at most ");
            json::push_i64(&mut m, max_items as i64);
            m.push_str(" are allowed (split the filter over several calls)");
            return Err(Error::invalid_params(m));
        }
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Value::String(s) if s.trim().is_empty() => {}
                Value::String(s) => out.push(s.trim()),
                other => {
                    return Err(Error::invalid_params([&concat3("argument `", name, "` must contain only strings, got "), other.type_name(), " entry"].concat()));
                }
            }
        }
        Ok(out)
    }

    /// The page size `k`: default 10, 1..=50.
    pub fn k(&self) -> Result<u32> {
        Ok(self.optional_int("k", 50)?.unwrap_or(10) as u32)
    }
}

fn concat3(a: &str, b: &str, c: &str) -> String {
    let mut s = String::with_capacity(a.len() + b.len() + c.len());
    s.push_str(a);
    s.push_str(b);
    s.push_str(c);
    s
}

/// Log levels of [`log`].
pub const LOG_DEBUG: i32 = 0;
pub const LOG_INFO: i32 = 1;
pub const LOG_WARN: i32 = 2;
pub const LOG_ERROR: i32 = 3;

#[link(wasm_import_module = "openhuman")]
extern "C" {
    #[link_name = "log"]
    fn host_log(level: i32, ptr: *const u8, len: u32);
}

/// Writes one line to the host's log (rate-limited by the host; always linked).
pub fn log(level: i32, msg: &str) {
    unsafe { host_log(level, msg.as_ptr(), msg.len() as u32) }
}

/// The signature of every capability host function.
pub type HostFn = unsafe extern "C" fn(*const u8, u32) -> u64;

/// Calls a host function with request bytes and returns its reply bytes
/// (`{"ok":…}` or `{"error":…}`), undecoded: for authors who bring their own JSON.
pub fn call_host_raw(f: HostFn, req: &[u8]) -> Vec<u8> {
    let packed = unsafe { f(req.as_ptr(), req.len() as u32) };
    unsafe { take((packed >> 32) as u32 as *mut u8, packed as u32) }
}

/// Calls host function `name` with a JSON request; returns the reply's `ok`
/// value, or its `error` as an [`Error`] a handler can return as is.
pub fn call_host(name: &str, f: HostFn, req: &Value) -> Result<Value> {
    let reply = call_host_raw(f, req.to_json().as_bytes());
    let v = json::parse(&reply).map_err(|e| Error::internal(concat3("host function ", name, &concat3(" replied with ", &e.message(), ""))))?;
    if let Some(ok) = v.get("ok") {
        return Ok(ok.clone());
    }
    match v.get("error") {
        Some(e) => Err(Error::new(e.str_of("code"), e.str_of("message"))),
        None => Err(Error::internal(concat3("host function ", name, " replied with neither ok nor error"))),
    }
}

// ---- the ABI plumbing export! expands to ----------------------------------------

/// Takes ownership of len bytes at ptr that `__oh_alloc` allocated.
unsafe fn take(ptr: *mut u8, len: u32) -> Vec<u8> {
    if len == 0 || ptr.is_null() {
        return Vec::new();
    }
    Vec::from_raw_parts(ptr, len as usize, len as usize)
}

// OUT holds the previous call's response until the next call (the host copies it
// out first); a guest instance runs one call at a time.
static mut OUT: Vec<u8> = Vec::new();

#[doc(hidden)]
pub fn __oh_alloc(size: u32) -> *mut u8 {
    if size == 0 {
        return 8 as *mut u8; // nothing is written; any in-bounds address will do
    }
    unsafe { std::alloc::alloc(std::alloc::Layout::from_size_align_unchecked(size as usize, 1)) }
}

#[doc(hidden)]
pub fn __oh_call(ptr: *mut u8, len: u32, handler: fn(&Request) -> Result<Value>) -> u64 {
    let raw = unsafe { take(ptr, len) };
    let resp = match parse_request(&raw) {
        Ok(req) => match handler(&req) {
            Ok(v @ Value::Object(_)) => Value::object([("result", v)]),
            Ok(v) => Value::object([("error", Error::internal(concat3("the tool returned JSON of type ", v.type_name(), "; a result must be a JSON object")).to_value())]),
            Err(e) => Value::object([("error", e.to_value())]),
        },
        Err(e) => Value::object([("error", e.to_value())]),
    };
    drop(raw);
    unsafe {
        OUT = resp.to_json().into_bytes();
        ((OUT.as_ptr() as u64) << 32) | OUT.len() as u64
    }
}

fn parse_request(raw: &[u8]) -> Result<Request> {
    let v = json::parse(raw).map_err(|e| Error::invalid_params(concat3("the call request is not valid JSON: ", &e.message(), "")))?;
    let arguments = match v.get("arguments") {
        None | Some(Value::Null) => Value::Object(Vec::new()),
        Some(a) => a.clone(),
    };
    Ok(Request {
        tool: v.str_of("tool").into(),
        arguments,
        client: v.str_of("client").into(),
        request_id: v.str_of("request_id").into(),
    })
}

/// Defines the module's `oh_alloc` and `oh_call` exports around a handler
/// `fn(&Request) -> Result<Value>`. Use it once, at the crate root.
#[macro_export]
macro_rules! export {
    ($handler:path) => {
        #[no_mangle]
        pub extern "C" fn oh_alloc(size: u32) -> *mut u8 {
            $crate::__oh_alloc(size)
        }
        #[no_mangle]
        pub extern "C" fn oh_call(ptr: *mut u8, len: u32) -> u64 {
            $crate::__oh_call(ptr, len, $handler)
        }
    };
}
