//! The progress bar on stderr for jobs that run longer than about a second.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// When to show a progress bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Progress {
    /// When stderr is a terminal.
    #[default]
    Auto,
    /// Always (for jobs longer than about a second).
    Always,
    /// Never.
    Never,
}

/// Shows a bar once a job has run for `DELAY`.
pub(crate) struct JobProgress {
    enabled: bool,
    started: Instant,
    bar: Option<ProgressBar>,
}

const DELAY: Duration = Duration::from_secs(1);

impl JobProgress {
    pub fn new(mode: Progress) -> JobProgress {
        let enabled = match mode {
            Progress::Auto => std::io::stderr().is_terminal(),
            Progress::Always => true,
            Progress::Never => false,
        };
        JobProgress {
            enabled,
            started: Instant::now(),
            bar: None,
        }
    }

    /// Records that `done` of `total` chunk tasks have finished.
    pub fn update(&mut self, done: u64, total: u64) {
        if !self.enabled || self.started.elapsed() < DELAY {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} chunks ({eta} left)",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        bar.set_length(total);
        bar.set_position(done);
    }

    /// Clears the bar.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
