//! How a supervised run ended and what it kept.

use std::collections::BTreeMap;

use super::{CALLER_MEM_BUDGET, EXIT_CONFORMANCE, EXIT_KERNEL_BUG, EXIT_TIMEOUT, LOG_CAP, STDOUT_CAP, VIOLATION_CAP};
use crate::driver::model::{LogLine, Violation};

/// How COMMAND ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
    /// It ran past the limit and was killed.
    TimedOut,
    /// A kernel BUG in strict mode: it was killed.
    KernelBug,
}

/// What a supervised run did.
#[derive(Debug)]
pub struct Outcome {
    /// How COMMAND ended.
    pub exit: Exit,
    /// The first [`LOG_CAP`] lines of the log: refusals, warnings, kernel BUGs.
    pub log: Vec<LogLine>,
    /// Lines of the log dropped past [`LOG_CAP`].
    pub log_dropped: u64,
    /// The violations: the first [`VIOLATION_CAP`].
    pub violations: Vec<Violation>,
    /// Violations dropped past [`VIOLATION_CAP`].
    pub violations_dropped: u64,
    /// Kernel BUGs seen, kept or not.
    pub kernel_bug_count: u64,
    /// Warnings seen, kept or not.
    pub warning_count: u64,
    /// Conformance violations seen, kept or not.
    pub conformance_count: u64,
    /// Requests served, by name.
    pub calls: BTreeMap<&'static str, u32>,
    /// Opens of the device answered.
    pub opens: u32,
    /// Calls refused with an errno.
    pub refusals: u32,
    /// The first [`STDOUT_CAP`] bytes of COMMAND's standard output, when captured.
    pub stdout: Vec<u8>,
    /// Bytes of captured output dropped past [`STDOUT_CAP`].
    pub stdout_dropped: u64,
    /// Inferences the device played.
    pub played: u32,
    /// Accesses to a caller's memory not finished within [`CALLER_MEM_BUDGET`],
    /// or refused with [`MAX_STUCK_READERS`](super::MAX_STUCK_READERS) held.
    pub late_reads: u64,
    /// Processes of COMMAND's tree other than COMMAND still running at the
    /// end of the run, and killed then.
    pub killed: u32,
}

impl Outcome {
    /// The kernel BUGs kept.
    pub fn kernel_bugs(&self) -> Vec<&Violation> {
        self.violations.iter().filter(|v| v.is_kernel_bug()).collect()
    }

    /// The supervisor's exit status: COMMAND's, except [`EXIT_KERNEL_BUG`]
    /// for a kernel BUG under `strict`, 128 + N for signal N, [`EXIT_TIMEOUT`].
    pub fn exit_status(&self, strict: bool) -> u8 {
        if strict && self.kernel_bug_count > 0 {
            return EXIT_KERNEL_BUG;
        }
        if strict && self.conformance_count > 0 {
            return EXIT_CONFORMANCE;
        }
        match self.exit {
            Exit::Code(c) => u8::try_from(c).unwrap_or(1),
            Exit::Signal(s) => 128u8.saturating_add(u8::try_from(s).unwrap_or(0)),
            Exit::TimedOut => EXIT_TIMEOUT,
            Exit::KernelBug => EXIT_KERNEL_BUG,
        }
    }

    /// What the summary says about the caps, when something was dropped.
    pub fn dropped_note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.log_dropped > 0 {
            parts.push(format!("the log kept its first {LOG_CAP} lines, {} more dropped", self.log_dropped));
        }
        if self.violations_dropped > 0 {
            parts.push(format!(
                "the violations kept their first {VIOLATION_CAP}, {} more dropped",
                self.violations_dropped
            ));
        }
        if self.stdout_dropped > 0 {
            parts.push(format!(
                "the captured output kept its first {STDOUT_CAP} bytes, {} more dropped",
                self.stdout_dropped
            ));
        }
        if self.late_reads > 0 {
            parts.push(format!(
                "{} access(es) to a caller's memory did not finish within {} ms (answered as faults)",
                self.late_reads,
                CALLER_MEM_BUDGET.as_millis()
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(exit: Exit, kernel_bug_count: u64) -> Outcome {
        Outcome {
            exit,
            log: Vec::new(),
            log_dropped: 0,
            violations: Vec::new(),
            violations_dropped: 0,
            kernel_bug_count,
            warning_count: 0,
            conformance_count: 0,
            calls: BTreeMap::new(),
            opens: 0,
            refusals: 0,
            stdout: Vec::new(),
            stdout_dropped: 0,
            played: 0,
            late_reads: 0,
            killed: 0,
        }
    }
    #[test]
    fn a_kernel_bug_fails_a_strict_run_whatever_else_ended_it() {
        // A BUG and the limit in the same moment: strict says 70, the log mode the limit.
        assert_eq!(outcome(Exit::TimedOut, 1).exit_status(true), EXIT_KERNEL_BUG);
        assert_eq!(outcome(Exit::TimedOut, 1).exit_status(false), EXIT_TIMEOUT);
        assert_eq!(outcome(Exit::Code(0), 2).exit_status(true), EXIT_KERNEL_BUG);
        assert_eq!(outcome(Exit::Code(0), 2).exit_status(false), 0);
        assert_eq!(outcome(Exit::Code(3), 0).exit_status(true), 3);
        assert_eq!(outcome(Exit::Code(300), 0).exit_status(true), 1);
        assert_eq!(outcome(Exit::Signal(9), 0).exit_status(true), 137);
        assert_eq!(outcome(Exit::KernelBug, 0).exit_status(false), EXIT_KERNEL_BUG);
        // A conformance violation fails a strict run at its end, after a BUG's status.
        let mut o = outcome(Exit::Code(0), 0);
        o.conformance_count = 1;
        assert_eq!((o.exit_status(true), o.exit_status(false)), (EXIT_CONFORMANCE, 0));
        o.kernel_bug_count = 1;
        assert_eq!(o.exit_status(true), EXIT_KERNEL_BUG);
        assert_eq!(outcome(Exit::Code(0), 0).dropped_note(), None);
        let mut o = outcome(Exit::Code(0), 0);
        (o.log_dropped, o.stdout_dropped) = (5, 7);
        let note = o.dropped_note().unwrap();
        assert!(note.contains("4096 lines, 5 more dropped") && note.contains("7 more dropped"), "{note}");
    }
}
