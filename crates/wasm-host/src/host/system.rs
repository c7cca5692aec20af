//! `system`: logging into `tracing` (with the context and depth), time, cancellation, the
//! workspace root, and a cancellable sleep.

use std::time::Duration;

use wasmtime::component::HasData;

use crate::bindings::system::{Host, LogLevel};
use crate::limits::GuestLimits;
use crate::state::{HostState, Place, RunSlot};

/// What `system` sees of a store: the run (its context, cancellation, workspace), the
/// guest's name and its limits.
pub(crate) struct SystemView<'a> {
    run: &'a RunSlot,
    place: &'a Place,
    limits: &'a GuestLimits,
}

impl<'a> SystemView<'a> {
    pub(crate) fn of(state: &'a mut HostState) -> Self {
        Self {
            run: &state.run,
            place: &state.place,
            limits: &state.guard.limits,
        }
    }
}

/// Links `system` on [`SystemView`].
pub(crate) struct SystemData;

impl HasData for SystemData {
    type Data<'a> = SystemView<'a>;
}

impl Host for SystemView<'_> {
    fn log(&mut self, level: LogLevel, message: String) -> wasmtime::Result<()> {
        let path = self.run.run.as_ref().map(|r| r.services.events.context());
        let context = path.map(ToString::to_string).unwrap_or_default();
        let depth = path.map_or(0, |p| p.depth());
        let guest = self.place.loop_name.as_str();
        match level {
            LogLevel::Trace => tracing::trace!(context, depth, guest, "{message}"),
            LogLevel::Debug => tracing::debug!(context, depth, guest, "{message}"),
            LogLevel::Info => tracing::info!(context, depth, guest, "{message}"),
            LogLevel::Warn => tracing::warn!(context, depth, guest, "{message}"),
            LogLevel::Error => tracing::error!(context, depth, guest, "{message}"),
        }
        let level = match level {
            LogLevel::Trace => "log trace",
            LogLevel::Debug => "log debug",
            LogLevel::Info => "log info",
            LogLevel::Warn => "log warn",
            LogLevel::Error => "log error",
        };
        self.place
            .host_config
            .guest_logs
            .keep(&context, guest, level, &message);
        Ok(())
    }

    fn current_time_ms(&mut self) -> wasmtime::Result<u64> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Ok(u64::try_from(now.as_millis()).unwrap_or(u64::MAX))
    }

    fn is_cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.run.services()?.cancel.is_cancelled())
    }

    fn get_cwd(&mut self) -> wasmtime::Result<String> {
        Ok(self.run.services()?.cwd.display().to_string())
    }

    async fn sleep_ms(&mut self, ms: u64) -> wasmtime::Result<()> {
        let wait = Duration::from_millis(ms).min(self.limits.max_sleep);
        let cancel = self.run.services()?.cancel.clone();
        tokio::select! {
            () = cancel.cancelled() => {}
            () = tokio::time::sleep(wait) => {}
        }
        Ok(())
    }
}
