//! How the programs print what they measured: a summary table, and for size sweeps an SVG
//! plot of bytes per cycle against message size.
use std::path::Path;

use plotters::prelude::*;

/// The clock rates are converted at: the routed Fmax of the 16-QP core in the ULX3S build
/// (speed grade 6, `bitstream/board-build`, docs/PERFORMANCE.md), the only whole-core
/// build that routes so far. Update it with the next routed build.
pub const ROUTED_FMAX_MHZ: f64 = 42.44;

/// A table with a header row, printed with aligned columns.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table { header: header.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(cells.len(), self.header.len(), "a row has one cell per column");
        self.rows.push(cells);
    }

    /// Markdown-compatible, so a run can be pasted into the docs as it is.
    pub fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.header.len())
            .map(|c| self.rows.iter().map(|r| r[c].len()).chain([self.header[c].len()]).max().unwrap_or(0))
            .collect();
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")).collect();
            format!("| {} |\n", padded.join(" | "))
        };
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        let mut out = line(&self.header);
        out.push_str(&format!("|-{}-|\n", rule.join("-|-")));
        self.rows.iter().for_each(|r| out.push_str(&line(r)));
        out
    }
}

/// One curve of a sweep: its name and (message size, bytes per cycle) points.
pub struct Curve<'a> {
    pub name: &'a str,
    pub points: Vec<(u32, f64)>,
}

/// Writes an SVG plot of `curves` (message size on a log axis) with the datapath width
/// `ceiling` (bytes per cycle) drawn as the limit.
pub fn plot_sweep(path: &Path, title: &str, curves: &[Curve<'_>], ceiling: f64) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("plotting {}: {e}", path.display());
    let sizes = || curves.iter().flat_map(|c| c.points.iter().map(|p| p.0));
    let (lo, hi) = (sizes().min().unwrap_or(1).max(1), sizes().max().unwrap_or(2).max(2));
    let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..ceiling * 1.1)
        .map_err(|e| fail(&e))?;
    chart.configure_mesh().x_desc("message size (octets)").y_desc("bytes per cycle").draw().map_err(|e| fail(&e))?;
    chart
        .draw_series(LineSeries::new([(lo, ceiling), (hi, ceiling)], BLACK.mix(0.4)))
        .map_err(|e| fail(&e))?
        .label(format!("datapath, {ceiling} bytes/cycle"))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], BLACK.mix(0.4)));
    for (i, curve) in curves.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(curve.points.iter().copied(), color.stroke_width(2)))
            .map_err(|e| fail(&e))?
            .label(curve.name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
        chart.draw_series(curve.points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(|e| fail(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))
}
