//! Charts, drawn with plotters into SVG by the same functions on the server
//! (SSR, so the page shows them without JavaScript) and in the browser on
//! every change. Text is placed at computed positions and never measured, so
//! both sides produce byte-identical SVG (snapshot-tested).

use cost_model::estimate::{Component, Estimate};
use cost_model::Bytes;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const W: u32 = 640;
const H: u32 = 300;
const LEFT: i32 = 56;
const RIGHT: i32 = 150;
const TOP: i32 = 16;
const BOTTOM: i32 = 40;

/// Muted colours readable on light and dark backgrounds.
const INK: RGBColor = RGBColor(0x86, 0x8c, 0x99);
const CAPACITY: RGBColor = RGBColor(0xd0, 0x3b, 0x32);
const FIT: RGBColor = RGBColor(0x2e, 0x9e, 0x5b);
const LINE: RGBColor = RGBColor(0x3c, 0x6b, 0xe0);

fn color(c: Component) -> RGBColor {
    match c {
        Component::Weights => RGBColor(0x3c, 0x6b, 0xe0),
        Component::Gradients => RGBColor(0x8e, 0x5c, 0xd9),
        Component::Optimizer => RGBColor(0xd9, 0x5c, 0xa8),
        Component::Activations => RGBColor(0xe8, 0x8a, 0x2e),
        Component::Logits => RGBColor(0xd4, 0xb4, 0x2a),
        Component::CommBuffers => RGBColor(0x2a, 0xa6, 0xa6),
        Component::Temporaries => RGBColor(0x6b, 0xb3, 0x4a),
        Component::AllocatorReserve => RGBColor(0x9a, 0xa2, 0xb0),
        Component::Runtime => RGBColor(0x5f, 0x66, 0x73),
    }
}

/// A round step for about `n` ticks up to `max` GiB.
fn nice_step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let k = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    k * mag
}

fn font(size: f64, anchor: Pos) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&INK).pos(anchor)
}

/// Y axis in GiB with grid lines; returns the y mapping.
fn y_axis<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    top_gib: f64,
) -> impl Fn(f64) -> i32 {
    let plot_h = (H as i32 - TOP - BOTTOM) as f64;
    let y = move |g: f64| TOP + (plot_h * (1.0 - g / top_gib)).round() as i32;
    let step = nice_step(top_gib, 5.0);
    let mut g = 0.0;
    while g <= top_gib + 1e-9 {
        let yy = y(g);
        let _ = root.draw(&PathElement::new(
            vec![(LEFT, yy), (W as i32 - RIGHT, yy)],
            INK.mix(0.25),
        ));
        let label = if step < 1.0 {
            format!("{g:.1}")
        } else {
            format!("{g:.0}")
        };
        let _ = root.draw(&Text::new(
            label,
            (LEFT - 6, yy),
            font(11.0, Pos::new(HPos::Right, VPos::Center)),
        ));
        g += step;
    }
    let _ = root.draw(&Text::new(
        "GiB",
        (LEFT - 6, TOP - 10),
        font(11.0, Pos::new(HPos::Right, VPos::Center)),
    ));
    y
}

fn dashed<DB: DrawingBackend>(root: &DrawingArea<DB, plotters::coord::Shift>, y: i32, c: RGBColor) {
    let mut x = LEFT;
    while x < W as i32 - RIGHT {
        let x2 = (x + 6).min(W as i32 - RIGHT);
        let _ = root.draw(&PathElement::new(vec![(x, y), (x2, y)], c.stroke_width(2)));
        x += 10;
    }
}

/// Stacked bar of each pipeline stage's peak breakdown against the capacity line.
pub fn breakdown_svg(
    est: &Estimate,
    stage_label: &str,
    capacity_label: &str,
    component_label: impl Fn(Component) -> String,
) -> String {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        let cap = est.capacity.gib();
        let max_used = est
            .stages
            .iter()
            .map(|s| s.peak.device_used.gib())
            .fold(0.0, f64::max);
        // The axis ends at the first tick above the tallest bar or the
        // capacity (with 8 % room): five ticks' worth of the step rounded up
        // left up to half the chart empty (250 GiB for 122).
        let want = cap.max(max_used) * 1.08;
        let step = nice_step(want, 5.0);
        let top = (want / step).ceil() * step;
        let y = y_axis(&root, top.max(1e-6));
        let n = est.stages.len().max(1) as i32;
        let plot_w = W as i32 - RIGHT - LEFT;
        let slot = plot_w / n;
        let bar_w = (slot * 3 / 5).clamp(8, 90);
        for (i, st) in est.stages.iter().enumerate() {
            let x0 = LEFT + slot * i as i32 + (slot - bar_w) / 2;
            let mut acc = 0.0;
            for c in Component::ALL {
                let v = st.peak_breakdown.get(c).gib();
                if v <= 0.0 {
                    continue;
                }
                let (ya, yb) = (y(acc), y(acc + v));
                let _ = root.draw(&Rectangle::new(
                    [(x0, yb), (x0 + bar_w, ya)],
                    color(c).filled(),
                ));
                acc += v;
            }
            let label = if n > 1 {
                format!("{stage_label} {}", st.stage + 1)
            } else {
                format!("{:.1} GiB", acc)
            };
            let _ = root.draw(&Text::new(
                label,
                (x0 + bar_w / 2, H as i32 - BOTTOM + 8),
                font(11.0, Pos::new(HPos::Center, VPos::Top)),
            ));
        }
        let yc = y(cap);
        dashed(&root, yc, CAPACITY);
        let cap_label = format!("{capacity_label} {cap:.1} GiB");
        let cap_font = ("sans-serif", 11.0).into_font().color(&CAPACITY);
        if n == 1 {
            // Over the line's right end, clear of the one bar in the middle.
            let _ = root.draw(&Text::new(
                cap_label,
                (W as i32 - RIGHT - 2, yc - 4),
                cap_font.pos(Pos::new(HPos::Right, VPos::Bottom)),
            ));
        } else {
            // Stages' bars run to the line's ends: the label joins the
            // legend, under the components, with a stroke of the line.
            let ly = TOP + 4 + Component::ALL.len() as i32 * 18 + 5;
            let lx = W as i32 - RIGHT + 14;
            let _ = root.draw(&PathElement::new(
                vec![(lx, ly), (lx + 10, ly)],
                CAPACITY.stroke_width(2),
            ));
            let _ = root.draw(&Text::new(
                cap_label,
                (lx + 15, ly),
                cap_font.pos(Pos::new(HPos::Left, VPos::Center)),
            ));
        }
        // Legend.
        for (k, c) in Component::ALL.iter().enumerate() {
            let ly = TOP + 4 + k as i32 * 18;
            let lx = W as i32 - RIGHT + 14;
            let _ = root.draw(&Rectangle::new(
                [(lx, ly), (lx + 10, ly + 10)],
                color(*c).filled(),
            ));
            let _ = root.draw(&Text::new(
                component_label(*c),
                (lx + 15, ly + 5),
                font(11.0, Pos::new(HPos::Left, VPos::Center)),
            ));
        }
        let _ = root.present();
    }
    buf
}

/// Memory versus one input (log₂ x axis) with the capacity line and the
/// largest value that fits marked.
pub fn sweep_svg(
    points: &[(u32, Option<Bytes>)],
    capacity: Bytes,
    best: Option<u32>,
    current: u32,
    x_label: &str,
) -> String {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        let valid: Vec<(u32, f64)> = points
            .iter()
            .filter_map(|(x, b)| b.map(|b| (*x, b.gib())))
            .collect();
        // Nothing to draw (an invalid plan): no empty SVG either, so the
        // page shows no blank box.
        if valid.len() < 2 {
            drop(root);
            return String::new();
        }
        let cap = capacity.gib();
        let max_v = valid.iter().map(|p| p.1).fold(0.0, f64::max);
        let min_v = valid.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        // The axis stops at three capacities, so the region where the
        // decision is made stays readable under a steep curve — or at twice
        // the lowest point when even that is further up (a plan many times
        // over the card), so the curve is never one flat line along the top.
        // Points above the axis are drawn on its edge with their value.
        let top = cap.max(max_v.min((cap * 3.0).max(min_v * 2.0))) * 1.08;
        let y = y_axis(&root, top.max(1e-6));
        let lx = |x: u32| (x.max(1) as f64).log2();
        let (x_min, x_max) = (
            lx(valid[0].0),
            lx(valid[valid.len() - 1].0).max(lx(valid[0].0) + 1.0),
        );
        let plot_w = (W as i32 - RIGHT - LEFT) as f64;
        let x = |v: u32| LEFT + ((lx(v) - x_min) / (x_max - x_min) * plot_w).round() as i32;
        let clamp_y = |g: f64| y(g.min(top));
        let pts: Vec<(i32, i32)> = valid.iter().map(|(a, b)| (x(*a), clamp_y(*b))).collect();
        let _ = root.draw(&PathElement::new(pts.clone(), LINE.stroke_width(2)));
        for ((a, b), p) in valid.iter().zip(&pts) {
            let c = if *b <= cap { FIT } else { CAPACITY };
            let _ = root.draw(&Circle::new(
                *p,
                if *a == current { 5 } else { 3 },
                c.filled(),
            ));
            if *b > top {
                let _ = root.draw(&Text::new(
                    format!("↑ {b:.0} GiB"),
                    (p.0, p.1 + 8),
                    ("sans-serif", 10.0)
                        .into_font()
                        .color(&CAPACITY)
                        .pos(Pos::new(HPos::Center, VPos::Top)),
                ));
            }
            let _ = root.draw(&Text::new(
                a.to_string(),
                (p.0, H as i32 - BOTTOM + 8),
                font(10.0, Pos::new(HPos::Center, VPos::Top)),
            ));
        }
        let yc = y(cap);
        dashed(&root, yc, CAPACITY);
        if let Some(b) = best {
            let bx = x(b.max(valid[0].0).min(valid[valid.len() - 1].0));
            let _ = root.draw(&PathElement::new(
                vec![(bx, TOP), (bx, H as i32 - BOTTOM)],
                FIT.stroke_width(1),
            ));
            let _ = root.draw(&Text::new(
                format!("≤ {b}"),
                (bx + 4, TOP + 2),
                ("sans-serif", 11.0)
                    .into_font()
                    .color(&FIT)
                    .pos(Pos::new(HPos::Left, VPos::Top)),
            ));
        }
        let _ = root.draw(&Text::new(
            x_label.to_string(),
            (W as i32 - RIGHT, H as i32 - 6),
            font(11.0, Pos::new(HPos::Right, VPos::Bottom)),
        ));
        let _ = root.present();
    }
    buf
}

const SERIES: [RGBColor; 8] = [
    RGBColor(0x3c, 0x6b, 0xe0),
    RGBColor(0xe8, 0x8a, 0x2e),
    RGBColor(0x2e, 0x9e, 0x5b),
    RGBColor(0x8e, 0x5c, 0xd9),
    RGBColor(0xd9, 0x5c, 0xa8),
    RGBColor(0x2a, 0xa6, 0xa6),
    RGBColor(0xd4, 0xb4, 0x2a),
    RGBColor(0x5f, 0x66, 0x73),
];

/// Measured memory per GPU against the plan: over time when the trace has a
/// series, else one bar per GPU; the prediction (line + band) and the
/// capacity drawn across. Figures in MiB in, GiB on the axis.
pub fn trace_svg(
    report: &cost_model::trace::findings::VerifyReport,
    predicted_mib: Option<(f64, f64, f64)>,
    capacity_mib: Option<f64>,
    labels: (&str, &str, &str),
) -> String {
    let (time_label, predicted_label, capacity_label) = labels;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        let gpus: Vec<_> = report
            .gpus
            .iter()
            .filter(|g| g.peak_used_mib.is_some())
            .collect();
        if gpus.is_empty() {
            let _ = root.present();
            drop(root);
            return buf;
        }
        let g = |mib: f64| mib / 1024.0;
        let cap = capacity_mib
            .or_else(|| gpus.iter().filter_map(|x| x.total_mib).reduce(f64::max))
            .map(g);
        let peak = gpus
            .iter()
            .filter_map(|x| x.peak_used_mib)
            .fold(0.0, f64::max);
        let mut top = g(peak);
        if let Some(c) = cap {
            top = top.max(c);
        }
        if let Some((_, _, hi)) = predicted_mib {
            top = top.max(g(hi));
        }
        let top = (top * 1.08).max(1e-6);
        let y = y_axis(&root, top);
        let plot_w = (W as i32 - RIGHT - LEFT) as f64;
        // The predicted band under the measurements, its line over them.
        if let Some((_, lo, hi)) = predicted_mib {
            let _ = root.draw(&Rectangle::new(
                [(LEFT, y(g(hi))), (W as i32 - RIGHT, y(g(lo)))],
                FIT.mix(0.15).filled(),
            ));
        }
        let timed = gpus.iter().any(|x| x.series.len() >= 2);
        if timed {
            let t_max = gpus
                .iter()
                .flat_map(|x| x.series.iter().map(|p| p[0]))
                .fold(0.0, f64::max)
                .max(1e-9);
            let x = |t: f64| LEFT + (t / t_max * plot_w).round() as i32;
            for (k, gp) in gpus.iter().enumerate() {
                let c = SERIES[k % SERIES.len()];
                let pts: Vec<(i32, i32)> = gp
                    .series
                    .iter()
                    .map(|p| (x(p[0]), y(g(p[1]).min(top))))
                    .collect();
                let _ = root.draw(&PathElement::new(pts, c.stroke_width(2)));
                let ly = TOP + 4 + (k as i32 % 12) * 18;
                let lx = W as i32 - RIGHT + 14;
                let _ = root.draw(&Rectangle::new([(lx, ly), (lx + 10, ly + 10)], c.filled()));
                let _ = root.draw(&Text::new(
                    format!("GPU {}", gp.index),
                    (lx + 15, ly + 5),
                    font(11.0, Pos::new(HPos::Left, VPos::Center)),
                ));
            }
            let _ = root.draw(&Text::new(
                format!("{time_label} ({:.0} s)", t_max),
                (W as i32 - RIGHT, H as i32 - 6),
                font(11.0, Pos::new(HPos::Right, VPos::Bottom)),
            ));
        } else {
            let n = gpus.len() as f64;
            let slot = plot_w / n;
            let bar_w = (slot * 0.6).clamp(4.0, 60.0) as i32;
            // A pipelined plan's GPU is compared with its own stage's peak
            // (the line is the worst stage's), an nn.DataParallel replica
            // with the replicas': a mark across its bar there.
            let own: Vec<(u32, f64)> = report
                .verdict
                .iter()
                .filter(|v| v.counter == "device_used" && predicted_mib.is_some())
                .flat_map(|v| v.gpus.iter())
                .filter(|v| v.stage.is_some() || v.replica)
                .filter_map(|v| Some((v.gpu?, v.predicted_mib)))
                .collect();
            for (k, gp) in gpus.iter().enumerate() {
                let cx = LEFT + (slot * (k as f64 + 0.5)) as i32;
                let v = g(gp.peak_used_mib.unwrap_or(0.0)).min(top);
                let _ = root.draw(&Rectangle::new(
                    [(cx - bar_w / 2, y(v)), (cx + bar_w / 2, y(0.0))],
                    SERIES[0].filled(),
                ));
                if let Some(&(_, p)) = own.iter().find(|o| o.0 == gp.index) {
                    let yp = y(g(p).min(top));
                    let _ = root.draw(&PathElement::new(
                        vec![(cx - bar_w / 2 - 6, yp), (cx + bar_w / 2 + 6, yp)],
                        FIT.stroke_width(3),
                    ));
                }
                let _ = root.draw(&Text::new(
                    format!("{}", gp.index),
                    (cx, H as i32 - BOTTOM + 8),
                    font(11.0, Pos::new(HPos::Center, VPos::Top)),
                ));
            }
            let _ = root.draw(&Text::new(
                "GPU".to_string(),
                (W as i32 - RIGHT, H as i32 - 6),
                font(11.0, Pos::new(HPos::Right, VPos::Bottom)),
            ));
        }
        if let Some((p, _, _)) = predicted_mib {
            let yp = y(g(p));
            let _ = root.draw(&PathElement::new(
                vec![(LEFT, yp), (W as i32 - RIGHT, yp)],
                FIT.stroke_width(2),
            ));
            // Labelled in the right margin, clear of bars and lines.
            let _ = root.draw(&Text::new(
                format!("{predicted_label} {:.1} GiB", g(p)),
                (W as i32 - RIGHT + 6, yp),
                ("sans-serif", 11.0)
                    .into_font()
                    .color(&FIT)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ));
        }
        if let Some(c) = cap {
            let yc = y(c);
            dashed(&root, yc, CAPACITY);
            let _ = root.draw(&Text::new(
                format!("{capacity_label} {c:.1} GiB"),
                (W as i32 - RIGHT - 2, yc - 4),
                ("sans-serif", 11.0)
                    .into_font()
                    .color(&CAPACITY)
                    .pos(Pos::new(HPos::Right, VPos::Bottom)),
            ));
        }
        let _ = root.present();
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use cost_model::search::{log2_points, max_micro_batch, sweep, Axis};
    use cost_model::Plan;

    #[test]
    fn a_pipelined_plans_bars_carry_their_stages_prediction() {
        use cost_model::trace::{findings::report, parse, ParseOptions};
        let mut plan = Plan::default();
        plan.parallel.pp = 2;
        plan.training.grad_accum = 8;
        let mut snap = String::from("timestamp, index, memory.used [MiB], memory.total [MiB]\n");
        for i in 0..8 {
            snap.push_str(&format!("1700000000, {i}, 60000 MiB, 81559 MiB\n"));
        }
        let trace = parse(&snap, &ParseOptions::default()).unwrap();
        let labels = ("time", "plan", "capacity");
        let draw = |plan: &Plan| {
            let rep = report(&trace, Some(plan));
            let v = rep.verdict.clone().unwrap();
            let pred = Some((v.predicted_mib, v.band_low_mib, v.band_high_mib));
            trace_svg(&rep, pred, None, labels)
                .matches("<polyline")
                .count()
        };
        // One mark per bar beyond the one-stage plan's lines.
        assert_eq!(draw(&plan), draw(&Plan::default()) + 8);
    }

    #[test]
    fn trace_chart_draws_series_or_bars_with_the_plan_and_capacity() {
        use cost_model::trace::{findings::report, parse, ParseOptions};
        let plan = Plan::default();
        let csv = "timestamp, index, memory.used [MiB], memory.total [MiB]\n\
                   1700000000, 0, 1000 MiB, 81559 MiB\n1700000001, 0, 50000 MiB, 81559 MiB\n\
                   1700000002, 0, 60000 MiB, 81559 MiB\n";
        let rep = report(&parse(csv, &ParseOptions::default()).unwrap(), Some(&plan));
        let v = rep.verdict.clone().unwrap();
        let pred = Some((v.predicted_mib, v.band_low_mib, v.band_high_mib));
        let labels = ("time", "plan", "capacity");
        let a = trace_svg(&rep, pred, None, labels);
        assert_eq!(a, trace_svg(&rep, pred, None, labels), "deterministic");
        assert!(
            a.contains("<polyline") || a.contains("<path"),
            "a series line"
        );
        assert!(
            a.contains("GPU 0") && a.contains("capacity 79.6 GiB"),
            "{a}"
        );
        assert!(a.contains(&format!("plan {:.1} GiB", v.predicted_mib / 1024.0)));
        // One snapshot per GPU: bars, no legend of series.
        let snap = "timestamp, index, memory.used [MiB], memory.total [MiB]\n\
                    1700000000, 0, 1000 MiB, 81559 MiB\n1700000000, 1, 2000 MiB, 81559 MiB\n";
        let rep = report(&parse(snap, &ParseOptions::default()).unwrap(), None);
        let b = trace_svg(&rep, None, None, labels);
        assert!(
            b.contains("<rect") && !b.contains("GPU 0") && b.contains("\nGPU\n"),
            "{b}"
        );
        // Nothing to draw: an empty picture, not a panic.
        let oom = report(
            &parse(
                "torch.OutOfMemoryError: CUDA out of memory.",
                &ParseOptions::default(),
            )
            .unwrap(),
            None,
        );
        assert!(!trace_svg(&oom, None, None, labels).contains("<rect"));
    }

    #[test]
    fn breakdown_chart_has_one_bar_per_stage_and_the_capacity_line() {
        let mut p = Plan::default();
        p.parallel.pp = 4;
        let est = cost_model::estimate(&p).unwrap();
        let svg = breakdown_svg(&est, "stage", "capacity", |c| c.id().to_string());
        assert!(svg.starts_with("<svg"), "{svg}");
        for s in 1..=4 {
            assert!(svg.contains(&format!("\nstage {s}\n")), "stage {s}");
        }
        assert!(svg.contains("capacity 79.6 GiB"));
        // The x of the text element that reads `label`.
        let text_x = |svg: &str, label: &str| -> i32 {
            let at = svg.find(label).unwrap();
            let open = svg[..at].rfind("<text").unwrap();
            let x = svg[open..].split("x=\"").nth(1).unwrap();
            x.split('"').next().unwrap().parse().unwrap()
        };
        // Stages' bars run the plot's width: the capacity's label is in the
        // legend, right of the plot, not over the last bar; one bar leaves
        // room at the line's right end.
        assert!(
            text_x(&svg, "capacity 79.6 GiB") > W as i32 - RIGHT,
            "{svg}"
        );
        let one = cost_model::estimate(&Plan::default()).unwrap();
        let one = breakdown_svg(&one, "stage", "capacity", |c| c.id().to_string());
        assert!(text_x(&one, "capacity 79.6 GiB") <= W as i32 - RIGHT);
        // The axis ends at the first tick above the tallest stage: 122 GiB
        // on Llama-3.1-70B's first of four stages gives 150, not 250.
        let mut p70 = Plan {
            model: cost_model::presets::preset("llama-3.1-70b").unwrap().spec(),
            ..Plan::default()
        };
        p70.parallel.num_gpus = 16;
        p70.parallel.pp = 4;
        p70.parallel.tp = 4;
        p70.parallel.sharding = cost_model::plan::Sharding::Ddp;
        p70.set_framework(cost_model::framework::Framework::Megatron);
        p70.training.grad_accum = 8;
        let e70 = cost_model::estimate(&p70).unwrap();
        let tallest = e70
            .stages
            .iter()
            .map(|s| s.peak.device_used.gib())
            .fold(0.0, f64::max);
        let svg70 = breakdown_svg(&e70, "stage", "capacity", |c| c.id().to_string());
        let ticks: Vec<f64> = svg70
            .split("<text")
            .filter_map(|t| {
                t.split('>')
                    .nth(1)?
                    .trim()
                    .split('<')
                    .next()?
                    .trim()
                    .parse()
                    .ok()
            })
            .collect();
        let last = ticks.iter().cloned().fold(0.0, f64::max);
        assert!(
            last >= tallest && last < tallest * 1.6,
            "{tallest} {ticks:?}"
        );
        // Drawing is deterministic (the same SVG on server and browser).
        assert_eq!(
            svg,
            breakdown_svg(&est, "stage", "capacity", |c| c.id().to_string())
        );
    }

    #[test]
    fn sweep_chart_marks_the_largest_fitting_value() {
        let p = Plan::default();
        let pts = log2_points(p.training.micro_batch, 64);
        let s = sweep(&p, Axis::MicroBatch, &pts);
        let best = max_micro_batch(&p).unwrap();
        let svg = sweep_svg(&s, p.gpu.capacity(), best, 1, "micro-batch");
        assert!(
            svg.contains("≤ 1") || svg.contains("&lt;") || svg.contains("≤"),
            "{svg}"
        );
        assert!(svg.contains("\nmicro-batch\n"));
        assert_eq!(sweep_svg(&[], p.gpu.capacity(), None, 1, "x"), "");
    }

    #[test]
    fn a_sweep_far_over_the_card_is_no_flat_line_along_the_top() {
        let cap = Bytes::from_gib(80);
        let pts = |v: &[u64]| -> Vec<(u32, Option<Bytes>)> {
            v.iter()
                .enumerate()
                .map(|(i, g)| (1u32 << i, Some(Bytes::from_gib(*g))))
                .collect()
        };
        // The ys of the line's points, from the SVG's polyline (the one in
        // the line's colour; the grid's come first).
        let ys = |svg: &str| -> Vec<i32> {
            let line = svg
                .split("<polyline")
                .find(|l| l.contains("stroke-width=\"2\""))
                .unwrap();
            let attr = line
                .split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            attr.split(' ')
                .filter_map(|xy| xy.split(',').nth(1)?.parse().ok())
                .collect()
        };
        // 384, 480, 672 GiB on an 80 GB card: three heights, none clamped.
        let far = sweep_svg(&pts(&[384, 480, 672]), cap, None, 1, "micro-batch");
        let y = ys(&far);
        assert!(y[0] > y[1] && y[1] > y[2], "{y:?}");
        assert!(!far.contains('↑'), "nothing off the axis");
        // A steep curve keeps the axis at three capacities and names the
        // points above it.
        let steep = sweep_svg(&pts(&[60, 120, 2000]), cap, None, 1, "micro-batch");
        assert!(steep.contains("↑ 2000 GiB"), "{steep}");
        assert!(!steep.contains("↑ 120 GiB"));
    }
}
