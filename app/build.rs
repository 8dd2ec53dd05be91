//! Files the Chinese translations (`src/zh.tsv`: English, a tab, Chinese) by
//! a 32-bit hash of their English, so that the page's WASM carries the
//! Chinese and four bytes a string instead of the English a second time
//! (the code holds it already). Writes `zh_keys.bin` (the keys, ascending,
//! little-endian) and `zh_text.txt` (the Chinese in the same order, one a
//! line) to `OUT_DIR`. Two English strings with one key fail the build.

include!("src/zh_key.rs");

fn main() {
    println!("cargo:rerun-if-changed=src/zh.tsv");
    println!("cargo:rerun-if-changed=src/zh_key.rs");
    let tsv = std::fs::read_to_string("src/zh.tsv").expect("app/src/zh.tsv");
    let mut pairs: Vec<(u32, &str, &str)> = Vec::new();
    for (n, line) in tsv.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (en, zh) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("app/src/zh.tsv line {}: no tab", n + 1));
        assert!(
            !zh.contains('\t'),
            "app/src/zh.tsv line {}: a second tab",
            n + 1
        );
        pairs.push((zh_key(en), en, zh));
    }
    pairs.sort_by_key(|p| p.0);
    for w in pairs.windows(2) {
        assert!(
            w[0].0 != w[1].0,
            "app/src/zh.tsv: {:?} and {:?} share the key {:08x}",
            w[0].1,
            w[1].1,
            w[0].0
        );
    }
    let keys: Vec<u8> = pairs.iter().flat_map(|p| p.0.to_le_bytes()).collect();
    let text: Vec<&str> = pairs.iter().map(|p| p.2).collect();
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("zh_keys.bin"), keys).expect("zh_keys.bin");
    std::fs::write(out.join("zh_text.txt"), text.join("\n")).expect("zh_text.txt");
}
