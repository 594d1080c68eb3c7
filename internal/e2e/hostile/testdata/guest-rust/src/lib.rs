//! A hostile Rust guest: each call breaks the openhuman/1 ABI in the way its
//! `try` argument names, below the SDK (raw exports, unsafe pointers); `ok`
//! serves normally through the SDK. The host must contain every attempt: the
//! call fails, and the server and the next call carry on.
use openhuman::json::Value;
use openhuman::{Request, Result};

#[link(wasm_import_module = "openhuman")]
extern "C" {
    fn sources_list(ptr: *const u8, len: u32) -> u64;
}

// LIE makes the next oh_alloc return an address outside linear memory.
static mut LIE: bool = false;

#[no_mangle]
pub extern "C" fn oh_alloc(size: u32) -> *mut u8 {
    unsafe {
        if LIE {
            LIE = false;
            return 0xFFFF_FF00usize as *mut u8;
        }
    }
    openhuman::__oh_alloc(size)
}

fn ok(_: &Request) -> Result<Value> {
    Ok(Value::object([("ok", true.into())]))
}

// recurse never returns: each frame keeps a buffer alive on the shadow stack.
#[allow(unconditional_recursion)]
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let mut buf = [0u8; 512];
    unsafe { std::ptr::write_volatile(&mut buf[(depth % 512) as usize], depth as u8) };
    recurse(depth + 1) + unsafe { std::ptr::read_volatile(&buf[3]) } as u64
}

static NOT_JSON: &[u8] = b"\xff\xfe{\"result\":";

#[no_mangle]
pub extern "C" fn oh_call(ptr: *mut u8, len: u32) -> u64 {
    let req = unsafe { std::slice::from_raw_parts(ptr, len as usize) };
    let v = openhuman::json::parse(req).unwrap_or(Value::Null);
    let attempt = v.get("arguments").map(|a| a.str_of("try")).unwrap_or("");
    match attempt {
        // A result pointer past the end of memory.
        "result_out_of_bounds" => (0xFFFF_0000u64 << 32) | 4096,
        // A 2 MiB result: over the 1 MiB cap.
        "result_too_big" => {
            let big = vec![b' '; 2 << 20];
            let p = big.as_ptr() as u64;
            std::mem::forget(big);
            (p << 32) | (2 << 20)
        }
        // Bytes that are not a response.
        "not_json" => ((NOT_JSON.as_ptr() as u64) << 32) | NOT_JSON.len() as u64,
        // A host call whose request lies outside memory, then one of 4 GiB.
        "request_out_of_bounds" => unsafe { sources_list(0xFFFF_FF00usize as *const u8, 4096) },
        "request_huge" => unsafe { sources_list(std::ptr::null(), u32::MAX) },
        // The host's reply is to be written at an address outside memory.
        "alloc_lies" => unsafe {
            LIE = true;
            sources_list(b"{}".as_ptr(), 2)
        },
        // Unbounded recursion; unbounded allocation.
        "recurse" => recurse(0),
        "grow" => loop {
            std::mem::forget(Vec::<u8>::with_capacity(1 << 20));
        },
        _ => openhuman::__oh_call(ptr, len, ok),
    }
}
