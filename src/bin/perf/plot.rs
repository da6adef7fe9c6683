//! `zipcoll-perf --plot FILE.png`: bus bandwidth against size, a line per compression setting
//! of the invocation (plotters, PNG).
//!
//! | element | what it shows                                                               |
//! |---------|-----------------------------------------------------------------------------|
//! | x       | size in bytes, log scale, labelled in powers of 1024 (`64M`)                 |
//! | y       | busbw (GB/s, nccl-tests' definition), from 0                                |
//! | a line  | one setting (`off`, `auto`, a codec), its sizes marked, named in the legend |
//!
//! Text needs a TrueType font: `ZIPCOLL_PLOT_FONT` names one, else the first of [`FONTS`]
//! found. Without one the plot has its lines and grid but no text, and a warning says so.

use plotters::prelude::*;
use std::path::Path;

/// Where fonts are looked for, in order, when `ZIPCOLL_PLOT_FONT` is not set (Debian and
/// Ubuntu, Fedora and RHEL, Arch, macOS).
pub const FONTS: [&str; 5] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
];

/// The lines' colors, in the settings' order.
const COLORS: [RGBColor; 6] = [
    RGBColor(0, 0, 0),
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
];

/// One line of the plot: a setting's (size in bytes, busbw in GB/s) points.
pub struct Line {
    pub name: String,
    pub points: Vec<(u64, f64)>,
}

/// Draws `lines` under `title` into the PNG `path`. Returns a warning to print when it drew
/// without text (no font found). Errors: the file cannot be written, or plotters failed.
pub fn draw(path: &Path, title: &str, lines: &[Line]) -> Result<Option<String>, String> {
    let with_text = register_font();
    let fail = |e: &dyn std::fmt::Display| format!("plotting {}: {e}", path.display());
    let (lo, hi) = x_range(lines);
    let top = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.1;
    let root = BitMapBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut builder = ChartBuilder::on(&root);
    builder.margin(16).x_label_area_size(48).y_label_area_size(64);
    if with_text.is_ok() {
        builder.caption(title, ("sans-serif", 22));
    }
    let mut chart = builder
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..top)
        .map_err(|e| fail(&e))?;
    // the grid and axes carry labels: without a font, only the lines are drawn
    if with_text.is_ok() {
        let decimals = (2.0 - top.log10().floor()).clamp(0.0, 6.0) as usize;
        chart
            .configure_mesh()
            .x_desc("size (bytes)")
            .y_desc("busbw (GB/s)")
            .x_label_formatter(&|b| bytes_label(*b))
            .y_label_formatter(&|v| format!("{v:.decimals$}"))
            .draw()
            .map_err(|e| fail(&e))?;
    }
    for (i, line) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let series = chart
            .draw_series(LineSeries::new(line.points.iter().copied(), color.stroke_width(2)))
            .map_err(|e| fail(&e))?;
        if with_text.is_ok() {
            series
                .label(line.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        chart
            .draw_series(line.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| fail(&e))?;
    }
    if with_text.is_ok() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(|e| fail(&e))?;
    }
    root.present().map_err(|e| fail(&e))?;
    Ok(with_text.err())
}

/// Registers the font text is drawn with (see the module docs); an error says why there is
/// none.
fn register_font() -> Result<(), String> {
    let named = std::env::var_os("ZIPCOLL_PLOT_FONT");
    let candidates: Vec<&Path> = match &named {
        Some(p) => vec![Path::new(p)],
        None => FONTS.iter().map(Path::new).collect(),
    };
    let Some((path, bytes)) = candidates.iter().find_map(|p| std::fs::read(p).ok().map(|b| (p, b))) else {
        return Err(match named {
            Some(p) => format!(
                "ZIPCOLL_PLOT_FONT={}: cannot read it; the plot has no text",
                Path::new(&p).display()
            ),
            None => "no TrueType font found (set ZIPCOLL_PLOT_FONT=FILE.ttf): the plot has no text".into(),
        });
    };
    // plotters keeps the font for the process's life
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).map_err(|_| {
        format!(
            "{}: not a TrueType font plotters reads; the plot has no text",
            path.display()
        )
    })
}

/// The sizes' range, widened to a factor of 2 each way (a log axis needs two distinct ends).
fn x_range(lines: &[Line]) -> (u64, u64) {
    let sizes = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0.max(1)));
    let lo = sizes.clone().min().unwrap_or(1);
    let hi = sizes.max().unwrap_or(2);
    ((lo / 2).max(1), hi.saturating_mul(2))
}

/// `b` bytes in powers of 1024 where whole (`64M`, `1G`, `12006`).
fn bytes_label(b: u64) -> String {
    for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_labelled_in_powers_of_1024() {
        assert_eq!(bytes_label(64 << 20), "64M");
        assert_eq!(bytes_label(1 << 30), "1G");
        assert_eq!(bytes_label(3 << 10), "3K");
        assert_eq!(bytes_label(12006), "12006");
        assert_eq!(
            x_range(&[Line {
                name: "off".into(),
                points: vec![(4096, 1.0)]
            }]),
            (2048, 8192)
        );
    }
}
