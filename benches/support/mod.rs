//! Shared by the benches: read criterion's mean estimates back and print
//! "ours / theirs" for each group, so a run ends with the ratios.

use std::path::PathBuf;

/// Where criterion writes its estimates (same rules as criterion itself,
/// minus the `cargo metadata` call).
fn criterion_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("criterion")
}

/// Mean time in ns of `group/function` from the last run.
pub fn mean_ns(group: &str, function: &str) -> Option<f64> {
    let path = criterion_home()
        .join(group)
        .join(function)
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value["mean"]["point_estimate"].as_f64()
}

/// After `cargo bench`, print `ours / theirs` of the mean time of each group.
/// Under `cargo test` the benches run once as smoke tests: no ratio then.
pub fn print_ratios(groups: &[&str], ours_name: &str, theirs_name: &str) {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    for group in groups {
        if let (Some(ours), Some(theirs)) = (mean_ns(group, ours_name), mean_ns(group, theirs_name))
        {
            println!(
                "{group}: {ours_name} {ours:.0} ns, {theirs_name} {theirs:.0} ns, ratio {ours_name}/{theirs_name} = {:.2}",
                ours / theirs
            );
        }
    }
}
