//! Records the git commit being built (`ALTO_GIT_COMMIT`, "unknown" outside a git checkout) and
//! whether tracked files outside `reports/` differed from it (`ALTO_GIT_DIRTY`: "true",
//! "false", or "unknown" outside a git checkout) for the measurement record; rebuilds when
//! HEAD moves or the index changes.

use std::path::Path;
use std::process::Command;

fn git(dir: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let commit = git(&dir, &["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=ALTO_GIT_COMMIT={commit}");
    // Untracked files do not make a build dirty: only changes to what the commit holds, outside
    // `reports/` (what the experiments write there is output, not code: regenerating a figure
    // must not mark the next build's measurements as coming from uncommitted code).
    let dirty = Command::new("git")
        .args([
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ".",
            ":(exclude)reports",
        ])
        .current_dir(&dir)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("unknown", |o| {
            if o.stdout.is_empty() {
                "false"
            } else {
                "true"
            }
        });
    println!("cargo:rustc-env=ALTO_GIT_DIRTY={dirty}");
    println!("cargo:rerun-if-changed=build.rs");
    // HEAD, the branch it points to, packed refs, and the index (staging or committing changes
    // it; only paths that exist: a missing one would rerun this script on every build).
    let mut watch = vec![
        "HEAD".to_string(),
        "packed-refs".to_string(),
        "index".to_string(),
    ];
    if let Some(r) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
        watch.push(r);
    }
    for w in watch {
        if let Some(p) = git(&dir, &["rev-parse", "--git-path", &w]) {
            let p = Path::new(&dir).join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
}
