//! Progress bars and log lines of a run.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress bars (hidden with `--no-progress` or when stderr is not a terminal; log lines are
/// printed either way).
pub struct Progress {
    multi: MultiProgress,
    visible: bool,
}

impl Progress {
    pub fn new(enabled: bool) -> Self {
        let multi = MultiProgress::new();
        let visible = enabled && console_is_tty();
        if !visible {
            multi.set_draw_target(ProgressDrawTarget::hidden());
        }
        Progress { multi, visible }
    }

    pub fn bar(&self, len: u64, template: &str) -> ProgressBar {
        let pb = self.multi.add(ProgressBar::new(len));
        pb.set_style(
            ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        pb
    }

    pub fn log(&self, line: &str) {
        if self.visible {
            let _ = self.multi.println(line);
        } else {
            eprintln!("{line}");
        }
    }
}

fn console_is_tty() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}
