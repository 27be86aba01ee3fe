//! The layout calculator from Rust: evaluates each argument (or a few
//! examples) as `retile eval` does and prints the answers.
//!
//! ```sh
//! cargo run -p retile-calc --example calculator -- 'logical_divide((4,2,3):(2,1,8), 4:2)'
//! ```

fn main() {
    let mut expressions: Vec<String> = std::env::args().skip(1).collect();
    if expressions.is_empty() {
        expressions = [
            "coalesce((2,(1,6)):(1,(6,2)))",
            "composition((6,2):(8,2), (4,3):(3,1))",
            "complement((2,2):(1,4), 24)",
            "tv_layout(local(2, 1).spatial(8, 4).local(1, 2))",
            "device_layout([512, 256], float16)",
            "composition((4,3):(1,5), 6:1)",
        ]
        .map(String::from)
        .to_vec();
    }
    for text in &expressions {
        match retile_calc::evaluate(text) {
            Ok(value) => println!("{text}\n  = {value}"),
            Err(e) => println!("{text}\n  error: {e}"),
        }
    }
}
