//! What the harvest needs of a platform, in one bound.

use super::ExecEvent;
use crate::counters::CounterSink;
use crate::hal::{Clock, CollectivesProxy, EventSink, FaultProbe, IntcCause, NqRings, TensorNotify};

/// Everything the harvest ([`ExecRequest::progress_one_step`](super::ExecRequest::progress_one_step))
/// needs from a platform: the platform traits of [`hal`](crate::hal), a sink for
/// the harvest's [`ExecEvent`]s and one for the per-core counters
/// ([`CounterSink`]).
///
/// It lives beside the harvest, not in `hal`, because it names the harvest's own
/// event type and the counters' update: `hal` stays a leaf that knows no layer.
///
/// Blanket-implemented: implement the parts and this follows.
pub trait ExecDevice:
    NqRings + IntcCause + Clock + CollectivesProxy + FaultProbe + EventSink<ExecEvent> + CounterSink + TensorNotify
{
}

impl<T> ExecDevice for T where
    T: NqRings
        + IntcCause
        + Clock
        + CollectivesProxy
        + FaultProbe
        + EventSink<ExecEvent>
        + CounterSink
        + TensorNotify
        + ?Sized
{
}
