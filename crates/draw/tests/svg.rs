//! Every drawing parses as XML, and its cells carry exactly what they show:
//! a layout's offsets, a thread-value layout's threads and values, a copy
//! plan's threads and accesses, a bank analysis's banks; over random inputs.

use std::collections::BTreeMap;

use proptest::prelude::*;
use quick_xml::events::Event;
use quick_xml::Reader;
use quick_xml::XmlVersion;
use retile_copy::{AccessPattern, BankAnalysis, Banks, TransposePlan, TransposeRequest};
use retile_draw::*;
use retile_layout::{ComposedLayout, IntTuple, Layout, Swizzle};

type Attrs = BTreeMap<String, String>;

/// The parsed document: every element's name and attributes, and all text.
struct Doc {
    elements: Vec<(String, Attrs)>,
    text: String,
}

/// Records an element's name and attributes; returns its name.
fn element(e: &quick_xml::events::BytesStart<'_>, elements: &mut Vec<(String, Attrs)>) -> String {
    let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
    let attrs = e
        .attributes()
        .map(|a| {
            let a = a.unwrap();
            let key = String::from_utf8(a.key.as_ref().to_vec()).unwrap();
            (
                key,
                a.normalized_value(XmlVersion::Implicit1_0)
                    .unwrap()
                    .into_owned(),
            )
        })
        .collect();
    if elements.is_empty() {
        assert_eq!(name, "svg");
    }
    elements.push((name.clone(), attrs));
    name
}

fn parse(svg: &str) -> Doc {
    let mut reader = Reader::from_str(svg);
    let mut elements = Vec::new();
    let mut text = String::new();
    let mut depth = 0i64;
    loop {
        match reader.read_event().expect("the drawing is well-formed XML") {
            Event::Start(e) => {
                let name = element(&e, &mut elements);
                if name == "tspan" {
                    text.push('\n'); // a new line of a label
                }
                depth += 1;
            }
            Event::Empty(e) => {
                element(&e, &mut elements);
            }
            Event::End(e) => {
                depth -= 1;
                if e.name().as_ref() == b"text" {
                    text.push('\n');
                }
            }
            Event::Text(t) => text.push_str(&t.decode().unwrap()),
            Event::GeneralRef(r) => {
                let entity = format!("&{};", r.decode().unwrap());
                text.push_str(&quick_xml::escape::unescape(&entity).expect("a known entity"));
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(depth, 0, "every element closed");
    Doc { elements, text }
}

impl Doc {
    /// The cells: rects with a `data-row`, their data as integers.
    fn cells(&self) -> Vec<BTreeMap<String, i64>> {
        self.elements
            .iter()
            .filter(|(n, a)| n == "rect" && a.contains_key("data-row"))
            .map(|(_, a)| {
                a.iter()
                    .filter_map(|(k, v)| {
                        Some((k.strip_prefix("data-")?.to_string(), v.parse().ok()?))
                    })
                    .collect()
            })
            .collect()
    }
}

/// `(drawn, total)` from an elided drawing's note "(N of M cells drawn".
fn drawn_of(text: &str) -> Option<(i64, i64)> {
    let note = &text[text.find("elided: ")?..];
    let before = &note[..note.find(" cells drawn;")?];
    let counts = &before[before.rfind('(')? + 1..];
    let (n, m) = counts.split_once(" of ")?;
    Some((n.parse().ok()?, m.parse().ok()?))
}

fn nested_shape() -> impl Strategy<Value = IntTuple> {
    let leaf = (1i64..=5).prop_map(IntTuple::Int);
    let mode = prop_oneof![3 => leaf.clone(), 1 => prop::collection::vec(leaf, 1..=3).prop_map(IntTuple::Tuple)];
    prop_oneof![
        1 => (1i64..=12).prop_map(IntTuple::Int),
        4 => prop::collection::vec(mode, 1..=4).prop_map(IntTuple::Tuple),
    ]
}

fn with_leaves(shape: &IntTuple, values: &mut impl Iterator<Item = i64>) -> IntTuple {
    match shape {
        IntTuple::Int(_) => IntTuple::Int(values.next().unwrap()),
        IntTuple::Tuple(ts) => IntTuple::Tuple(ts.iter().map(|t| with_leaves(t, values)).collect()),
    }
}

/// Any layout of rank 1 to 4 (modes nested one level), maybe swizzled.
fn any_layout() -> impl Strategy<Value = ComposedLayout> {
    nested_shape()
        .prop_flat_map(|s| {
            let n = s.leaves().len();
            (
                Just(s),
                prop::collection::vec(-6i64..=40, n),
                prop::option::of((1i64..=3, 0i64..=3, 3i64..=5, -10i64..=10)),
            )
        })
        .prop_map(|(s, d, sw)| {
            let layout = Layout::new(s.clone(), with_leaves(&s, &mut d.into_iter())).unwrap();
            match sw {
                Some((b, m, sh, off)) => {
                    ComposedLayout::new(Swizzle::new(b, m, sh).unwrap(), off, layout)
                }
                None => ComposedLayout::from(layout),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_layouts_cells_carry_exactly_its_offsets(layout in any_layout()) {
        let svg = layout_svg(&layout).unwrap();
        prop_assert_eq!(&svg, &layout_svg(&layout).unwrap(), "deterministic");
        let doc = parse(&svg);
        let rows = layout.layout().mode(0).unwrap().size().unwrap();
        let rows = if layout.rank() == 1 { layout.size().unwrap() } else { rows };
        let size = layout.size().unwrap();
        let mut seen = vec![false; size as usize];
        let cells = doc.cells();
        for cell in &cells {
            let index = cell["row"] + rows * cell["col"];
            // the offset of the cell's coordinate, colexicographic index into the layout
            prop_assert_eq!(cell["offset"], layout.eval(index).unwrap());
            prop_assert!(!seen[index as usize], "a cell twice");
            seen[index as usize] = true;
        }
        match drawn_of(&doc.text) {
            // an elided drawing says how many of all the cells it draws
            Some((drawn, total)) => prop_assert_eq!((drawn, total), (cells.len() as i64, size)),
            None => prop_assert!(seen.iter().all(|&s| s), "every cell drawn"),
        }
        prop_assert!(doc.text.contains(&layout.to_string()), "the title is text");
        for cell in doc.cells() {
            prop_assert!(doc.text.contains(&cell["offset"].to_string()));
        }
    }

    #[test]
    fn a_thread_value_layouts_cells_carry_their_first_holder(
        threads in prop::collection::vec(1i64..=4, 1..=3),
        values in prop::collection::vec(1i64..=4, 1..=2),
        seed in any::<u64>(),
        rows_pow in 0u32..=4,
    ) {
        // a random compact TV layout: the leaves' strides a shuffled prefix product
        let leaves: Vec<i64> = threads.iter().chain(&values).copied().collect();
        let mut order: Vec<usize> = (0..leaves.len()).collect();
        let mut s = seed;
        for i in (1..order.len()).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            order.swap(i, (s >> 33) as usize % (i + 1));
        }
        let mut strides = vec![0; leaves.len()];
        let mut acc = 1;
        for &k in &order {
            strides[k] = acc;
            acc *= leaves[k];
        }
        let t = |v: &[i64]| IntTuple::from(v);
        let nt = threads.len();
        let tv = Layout::new(
            IntTuple::Tuple(vec![t(&leaves[..nt]), t(&leaves[nt..])]),
            IntTuple::Tuple(vec![t(&strides[..nt]), t(&strides[nt..])]),
        ).unwrap();
        let elements = acc;
        let rows = (1i64 << rows_pow).min(elements);
        prop_assume!(elements % rows == 0 && elements / rows <= MAX_SHOWN);
        let svg = tv_svg(&tv, rows, elements / rows).unwrap();
        let doc = parse(&svg);
        let cells = doc.cells();
        prop_assert_eq!(cells.len() as i64, elements);
        for cell in cells {
            let coord = IntTuple::Tuple(vec![IntTuple::Int(cell["thread"]), IntTuple::Int(cell["value"])]);
            prop_assert_eq!(tv.eval_coord(&coord).unwrap(), cell["row"] + rows * cell["col"]);
            let label = format!("T{}\nV{}", cell["thread"], cell["value"]);
            prop_assert!(doc.text.contains(&label), "{}", label);
        }
    }
}

#[test]
fn register_layouts_draw_as_their_thread_value_layouts() {
    for (layout, shape) in [
        (retile_register::spatial(&[2, 3]).unwrap(), [2i64, 3]),
        (
            retile_register::local(&[2, 1])
                .unwrap()
                .compose(&retile_register::spatial(&[8, 4]).unwrap())
                .unwrap()
                .compose(&retile_register::local(&[1, 2]).unwrap())
                .unwrap(),
            [16, 8],
        ),
    ] {
        let doc = parse(&register_svg(&layout).unwrap());
        let cells = doc.cells();
        assert_eq!(cells.len() as i64, shape[0] * shape[1]);
        for cell in cells {
            let holders = layout.holders(&[cell["row"], cell["col"]]).unwrap();
            assert_eq!(holders[0], (cell["thread"], cell["value"]), "{layout}");
        }
    }
}

#[test]
fn a_copy_plans_cells_carry_the_thread_and_access_that_move_them() {
    for (threads, shape) in [(4i64, (8, 8)), (64, (64, 16)), (32, (24, 12))] {
        let (n, k) = shape;
        let r = TransposeRequest::new(
            threads,
            16,
            128,
            format!("({n},{k}):(1,{n})").parse().unwrap(),
            format!("({n},{k}):({k},1)").parse().unwrap(),
        );
        let TransposePlan::Applies(t) = r.plan().unwrap() else {
            panic!("{r:?}")
        };
        let doc = parse(&copy_svg(&t).unwrap());
        let mut checked = 0;
        for (name, attrs) in &doc.elements {
            let Some(side) = attrs.get("data-side") else {
                continue;
            };
            assert_eq!(name, "rect");
            let get = |k: &str| attrs[&format!("data-{k}")].parse::<i64>().unwrap();
            let accesses = if side == "load" {
                t.loads_of(get("thread"))
            } else {
                t.stores_of(get("thread"))
            }
            .unwrap();
            let a = &accesses[get("access") as usize];
            let (row, col) = (get("row"), get("col"));
            let along = if a.dim == 0 {
                row - a.coord[0]
            } else {
                col - a.coord[1]
            };
            let across = if a.dim == 0 {
                col - a.coord[1]
            } else {
                row - a.coord[0]
            };
            assert!(
                across == 0 && (0..a.width).contains(&along),
                "{side} {row},{col}: {a:?}"
            );
            checked += 1;
        }
        assert_eq!(checked, 2 * n * k);
    }
}

#[test]
fn a_bank_pictures_cells_carry_their_offsets_and_banks_before_and_after() {
    let rows = AccessPattern::from_tv(&"(32,32):(1,32)".parse().unwrap(), 1, 32).unwrap();
    let a = BankAnalysis::new(
        "(32,32):(32,1)".parse().unwrap(),
        rows,
        32,
        Banks::default(),
    )
    .unwrap();
    let svg = banks_svg(&a).unwrap();
    let doc = parse(&svg);
    let suggestion = a.suggestion.as_ref().unwrap();
    let mut panels = BTreeMap::new();
    for (_, attrs) in doc
        .elements
        .iter()
        .filter(|(_, a)| a.contains_key("data-panel"))
    {
        let get = |k: &str| attrs[&format!("data-{k}")].parse::<i64>().unwrap();
        let memory = if attrs["data-panel"] == "as given" {
            &a.memory
        } else {
            &suggestion.memory
        };
        let offset = memory.eval(get("row") + 32 * get("col")).unwrap();
        assert_eq!(get("offset"), offset);
        assert_eq!(get("bank"), Banks::default().bank_of_element(offset, 32));
        *panels.entry(attrs["data-panel"].clone()).or_insert(0) += 1;
    }
    assert_eq!(panels["as given"], 1024);
    assert_eq!(panels[&format!("with {}", suggestion.swizzle)], 1024);
    assert!(
        doc.text.contains("1024 wavefronts for 32 ideal"),
        "{}",
        doc.text
    );
}

#[test]
fn a_128x32x32_layout_is_elided_and_says_so_in_a_small_file() {
    let layout: ComposedLayout = "(128,32,32):(1,128,4096)".parse().unwrap();
    let svg = layout_svg(&layout).unwrap();
    assert!(svg.len() < 3 << 20, "{} bytes", svg.len());
    let doc = parse(&svg);
    assert!(
        doc.text.contains("elided: columns 32..991 (960 of 1024)"),
        "{}",
        doc.text
    );
    let cells = doc.cells();
    assert_eq!(cells.len(), 128 * 64);
    for cell in cells {
        assert_eq!(
            cell["offset"],
            layout.eval(cell["row"] + 128 * cell["col"]).unwrap()
        );
        assert!(cell["col"] < 32 || cell["col"] >= 992);
    }
}

#[test]
fn text_with_markup_characters_is_escaped() {
    // a title holding '<' and '>' (a tiler-like name) and '&' stays well-formed
    let l: ComposedLayout = "Sw<1,0,1> o 4:1".parse().unwrap();
    let svg = layout_svg(&l).unwrap();
    assert!(svg.contains("Sw&lt;1,0,1&gt; o 4:1"));
    parse(&svg);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_stream_plans_frame_carries_each_tiles_slot_retire_order_and_shard(
        shape in prop::collection::vec(1u64..=40, 2..=4),
        tile in prop::collection::vec(1u64..=9, 4),
        shard in prop::collection::vec(1u64..=3, 4),
        unbounded in any::<bool>(),
    ) {
        use retile_plan::{DType, StreamPlan, StreamSpec};
        let rank = shape.len();
        let mut shape = shape;
        if unbounded {
            shape[0] = 0;
        }
        let tile = tile[..rank].to_vec();
        let shard = &shard[..rank];
        let plan = StreamPlan::new(&StreamSpec::new(DType::U8, shape.clone(), tile.clone()).unwrap()).unwrap();
        let svg = stream_svg(&plan, Some(shard), &[]).unwrap();
        let doc = parse(&svg);
        let counts = plan.tile_counts().to_vec();
        // slot -> (first, last) of the epoch's tiles, in slot order
        let spans = plan.tiles(plan.m() as usize);
        let mut frame = 0;
        for (_, a) in doc.elements.iter().filter(|(n, a)| n == "rect" && a.contains_key("data-retire")) {
            let get = |k: &str| a[&format!("data-{k}")].parse::<u64>().unwrap();
            let slot = get("slot") as usize;
            let tile_coord = &spans[slot].tile;
            // the retire rank counts the tiles of the epoch whose last index comes first
            let earlier = spans.iter().filter(|s| (s.last, &s.tile) < (spans[slot].last, tile_coord)).count();
            prop_assert_eq!(get("retire"), earlier as u64);
            let shard_id: Vec<u64> = tile_coord.iter().zip(shard).map(|(t, n)| t / n).collect();
            let grid: Vec<u64> = counts.iter().zip(shard).map(|(c, n)| c.div_ceil(*n)).collect();
            prop_assert_eq!(get("shard"), retile_plan::ravel(&shard_id[1..], &grid[1..]));
            frame += 1;
        }
        // every tile of the frame is drawn, unless the grid is elided
        if drawn_of(&doc.text).is_none() {
            prop_assert_eq!(frame, plan.m());
        }
        prop_assert_eq!(stream_svg(&plan, Some(shard), &[]).unwrap(), svg, "deterministic");
    }
}
