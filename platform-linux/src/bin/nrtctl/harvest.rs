//! `nrtctl harvest`: inferences from `nrt-sim serve --shm PATH` in another
//! process, through this binding's mappings. Exits 0 when every harvest
//! finished, whatever its status, and asks the server to stop unless `--leave-running`.

use std::process::ExitCode;

use nrt_abi::{errln, outln, outp};

use crate::{init_log, DelayArg, HarvestArgs};

pub(crate) fn harvest(a: &HarvestArgs) -> ExitCode {
    use nrt_linux::config::{Budget, RtEnv, Uses};
    use nrt_linux::harvest::Harvester;
    use nrt_linux::time::DelayKind;
    // The server's file fixes the cores: the core variables are not read.
    let env = match RtEnv::from_process(Uses::TIMEOUT_AND_LOG) {
        Ok(e) => e,
        Err(e) => {
            errln!("nrtctl harvest: {e}");
            return ExitCode::from(2);
        }
    };
    init_log(&env.log);
    let mut h = match Harvester::attach(&a.shm, a.wait_s) {
        Ok(h) => h,
        Err(e) => {
            errln!("nrtctl harvest: {e}");
            return ExitCode::FAILURE;
        }
    };
    let delay = match a.delay {
        DelayArg::Libnrt => DelayKind::Libnrt,
        DelayArg::Adaptive => DelayKind::Adaptive,
    };
    let budget = Budget::resolve(a.timeout_s, "--timeout-s", &env, h.arch());
    // The harvest's own timeout line names it too.
    let _budget = nrt_linux::config::BudgetScope::enter(budget);
    let mut code = ExitCode::SUCCESS;
    for i in 1..=a.inferences {
        let r = h.harvest(budget.seconds, delay);
        if let Ok(r) = &r {
            if matches!(r.status, nrt_core::NrtStatus::Timeout | nrt_core::NrtStatus::ExecSwNqOverflow) {
                // The served file's cores, by the report's timed-out core lines.
                let engines: Vec<String> = r
                    .cores
                    .iter()
                    .filter_map(|c| match c.harvest {
                        nrt_abi::report::CoreHarvest::TimedOut { no_start, no_end, .. } => {
                            Some(nrt_linux::oplog::pending_of(&format!("core {}", c.core), no_start, no_end))
                        }
                        _ => None,
                    })
                    .collect();
                errln!(
                    "{}nrtctl harvest: inference {i}: {}: the harvest ended at its {budget}: status {} {}{}{}",
                    nrt_linux::oplog::stamp(),
                    a.shm.display(),
                    r.status.code(),
                    r.status.name(),
                    if engines.is_empty() { "" } else { "; " },
                    engines.join("; ")
                );
            }
        }
        match r {
            Ok(r) if a.json => outln!("{:#}", nrt_abi::report::json(&r, None)),
            Ok(r) => {
                let heading = format!("nrtctl harvest --shm {}: inference {i} of {}", a.shm.display(), a.inferences);
                outp!("{}", nrt_abi::report::text_with_heading(&r, &heading));
                if i < a.inferences {
                    outln!();
                }
            }
            Err(e) => {
                errln!("nrtctl harvest: inference {i}: {e}");
                code = ExitCode::FAILURE;
                break;
            }
        }
    }
    if !a.leave_running {
        h.shutdown_server();
    }
    code
}
