//! The descriptor handoff (descriptor-handoff seed §1-§5). Filled in by issue 3.

use core::fmt;

use crate::event::Level;

/// A descriptor-handoff event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DmaEvent {
    /// Placeholder until the module lands.
    Placeholder,
}

impl DmaEvent {
    /// How loud the event is.
    pub fn level(&self) -> Level {
        Level::Info
    }
    /// A short machine-friendly name.
    pub fn kind(&self) -> &'static str {
        "dma"
    }
}

impl fmt::Display for DmaEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}
