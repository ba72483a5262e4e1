//! Rendering a [`RunReport`]: the human text and the JSON object of `nrt-sim run`,
//! and the scenario table of `--scenario all`.
//!
//! The report and its printers are defined in [`nrt_abi::report`], so that
//! `nrtctl` prints the same without the simulator; this module re-exports them
//! and labels a run with a [`Scenario`].

use serde_json::Value;

pub use nrt_abi::report::{table_json, table_text, text_with_heading, Row, RowError, TIMELINE_COLUMNS};

use crate::run::RunReport;
use crate::scenario::Scenario;

/// The text report of one run. `title` names the scenario, if any.
pub fn text(r: &RunReport, title: Option<&Scenario>) -> String {
    nrt_abi::report::text(r, title.map(|s| (s.name, s.description)))
}

/// The JSON object of one run, labelled with its scenario's name and expected status, if any.
pub fn json(r: &RunReport, scenario: Option<&Scenario>) -> Value {
    nrt_abi::report::json(r, scenario.map(|s| (s.name, s.expected)))
}
