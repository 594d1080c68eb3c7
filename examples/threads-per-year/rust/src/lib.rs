//! threads-per-year (Rust): how many e-mail threads the memory tree holds per
//! year of their most recent message.
use openhuman::json::Value;
use openhuman::{memory, Request, Result};

/// The UTC year of a Unix time in milliseconds (civil_from_days).
fn year_of(ms: i64) -> i64 {
    let z = ms.div_euclid(86_400_000) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    yoe + era * 400 + (mp >= 10) as i64
}

fn handle(r: &Request) -> Result<Value> {
    r.args(&[])?;
    let mut counts: Vec<(i64, i64)> = Vec::new(); // (year, threads)
    let mut total = 0i64;
    let mut offset = 0u32;
    loop {
        let page = memory::list_sources(&memory::SourcesQuery { kinds: vec!["email"], k: 50, offset, ..Default::default() })?;
        for s in &page.sources {
            let y = year_of(s.most_recent_ms);
            match counts.iter_mut().find(|c| c.0 == y) {
                Some(c) => c.1 += 1,
                None => counts.push((y, 1)),
            }
            total += 1;
        }
        if page.next == 0 {
            break;
        }
        offset = page.next as u32;
    }
    counts.sort();
    let years = counts.iter().map(|&(y, n)| Value::object([("year", y.into()), ("threads", n.into())])).collect();
    Ok(Value::object([("years", Value::Array(years)), ("threads", total.into())]))
}

openhuman::export!(handle);
