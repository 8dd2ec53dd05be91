//! Files the Chinese translations (`src/zh.tsv`: English, a tab, Chinese) by
//! a 32-bit hash of their English, so that the page's WASM carries the
//! Chinese and eight bytes a string instead of the English a second time
//! (the code holds it already). Writes `zh_keys.bin` (per string, its key and
//! the end of its Chinese in the text, little-endian u32s, keys ascending)
//! and `zh_text.txt` (the Chinese in the same order, end to end) to
//! `OUT_DIR`. Two English strings with one key fail the build.

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
    // Each record: the key, then where its Chinese ends in the text (it
    // starts where the previous record's ends).
    let mut records: Vec<u8> = Vec::new();
    let mut text = String::new();
    for (key, _, zh) in &pairs {
        text.push_str(zh);
        let end = u32::try_from(text.len()).expect("zh.tsv's Chinese under 4 GiB");
        records.extend(key.to_le_bytes());
        records.extend(end.to_le_bytes());
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("zh_keys.bin"), records).expect("zh_keys.bin");
    std::fs::write(out.join("zh_text.txt"), text).expect("zh_text.txt");
}
