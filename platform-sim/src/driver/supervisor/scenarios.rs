//! `--scenario all`: COMMAND once per scenario, and the status read from
//! its output.

use nrt_core::NrtStatus;

use super::{run, DriverConfig};
use crate::report::Row;
use crate::scenario::{Mismatch, SCENARIOS};

/// The status and, when printed, the one-step return code in COMMAND's
/// output: a JSON report's top-level `"status"` and `"return_code"`, or the
/// text report's `status: <code> <NAME>` and `one-step return: <rc>` lines.
pub fn parse_status(out: &[u8]) -> Option<(NrtStatus, Option<u8>)> {
    let text = String::from_utf8_lossy(out);
    let trimmed = text.trim();
    if trimmed.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(trimmed) {
            let code = v.get("status").and_then(serde_json::Value::as_u64)?;
            let rc = v.get("return_code").and_then(serde_json::Value::as_u64).and_then(|r| u8::try_from(r).ok());
            return Some((NrtStatus::from_code(u32::try_from(code).ok()?), rc));
        }
    }
    let mut status = None;
    let mut rc = None;
    for line in text.lines() {
        let l = line.trim_start();
        if let Some(rest) = l.strip_prefix("status: ") {
            if let Some(code) = rest.split_whitespace().next().and_then(|c| c.parse::<u32>().ok()) {
                status.get_or_insert(NrtStatus::from_code(code));
            }
        } else if let Some(rest) = l.strip_prefix("one-step return: ") {
            rc = rc.or_else(|| rest.split_whitespace().next().and_then(|c| c.parse::<u8>().ok()));
        }
    }
    status.map(|s| (s, rc))
}

/// `--scenario all`: COMMAND once per scenario on a fresh device, and the
/// table of `nrt-sim run --scenario all`. `base` gives everything but the
/// device; barrier-300s, which needs 300 s of real time, is skipped. Returns
/// the rows and the names skipped with their reason.
pub fn run_all(base: &DriverConfig, out: &mut dyn std::io::Write) -> (Vec<Row>, Vec<(&'static str, String)>) {
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for s in SCENARIOS {
        if s.name == "barrier-300s" {
            let why = "needs 300 s of real time (the barrier clears at 300 s)".to_string();
            let _ = writeln!(out, "{:20} SKIPPED: {why}", s.name);
            skipped.push((s.name, why));
            continue;
        }
        let cfg = DriverConfig { sim: s.config(), capture_stdout: true, ..base.clone() };
        let row = match run(&cfg) {
            Ok(o) => {
                let bugs: Vec<String> = o.kernel_bugs().iter().map(|v| v.to_string()).collect();
                match parse_status(&o.stdout) {
                    _ if cfg.strict && !bugs.is_empty() => s.row(Err(bugs.join("; ").into()), Err("kernel BUG".into())),
                    Some((st, None)) => s.row(
                        Err(format!("{} {} (no return code printed)", st.code(), st.name()).into()),
                        if st == s.expected {
                            Err("no one-step return code in COMMAND's output".into())
                        } else {
                            Err(Mismatch::Status { got: st, expected: s.expected }.into())
                        },
                    ),
                    Some((st, Some(rc))) => s.row(Ok((st, rc)), s.check_status(st, rc).map_err(Into::into)),
                    None => s.row(
                        Err(format!("no status line in COMMAND's output ({:?})", o.exit).into()),
                        Err("no status".into()),
                    ),
                }
            }
            Err(e) => s.failed_row(e),
        };
        rows.push(row);
    }
    (rows, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_found_in_text_and_json() {
        let t = b"heading\n\nstatus: 1003 NRT_EXEC_NAN (nan)\none-step return: 0 (ok) after 3 steps\n";
        assert_eq!(parse_status(t), Some((NrtStatus::from_code(1003), Some(0))));
        let j = br#"{"status": 5, "status_name": "NRT_TIMEOUT", "return_code": 2}"#;
        assert_eq!(parse_status(j), Some((NrtStatus::from_code(5), Some(2))));
        assert_eq!(parse_status(b"nothing"), None);
        assert_eq!(parse_status(&[0xFF, 0xFE]), None);
    }
}
