//! The DGE DMA-priority gate (descriptor-handoff seed §6). Filled in by issue 3.

use core::fmt;

use crate::event::Level;

/// A DGE gate event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DgeEvent {
    /// Placeholder until the module lands.
    Placeholder,
}

impl DgeEvent {
    /// How loud the event is.
    pub fn level(&self) -> Level {
        Level::Info
    }
    /// A short machine-friendly name.
    pub fn kind(&self) -> &'static str {
        "dge"
    }
}

impl fmt::Display for DgeEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}
