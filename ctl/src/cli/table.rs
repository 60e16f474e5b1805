//! Tables in iproute2's spirit: plain columns, no borders, fitting the terminal.

use comfy_table::presets::NOTHING;
use comfy_table::{ContentArrangement, Table};

pub fn new(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().copied());
    if let Some(width) = terminal_width() {
        t.set_width(width);
    }
    t
}

/// `COLUMNS` when set (no terminal query: output often goes to a pipe).
fn terminal_width() -> Option<u16> {
    std::env::var("COLUMNS").ok()?.parse().ok()
}

/// `-` for nothing, as iproute2 prints.
pub fn or_dash(v: Option<impl ToString>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}
