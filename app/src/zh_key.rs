// Shared by `build.rs` (which `include!`s this file) and `i18n.rs`: the key
// under which the translation table files an English string.

/// 32-bit FNV-1a of the string's UTF-8 bytes (Fowler, Noll and Vo; offset
/// basis 2166136261, prime 16777619).
pub const fn zh_key(en: &str) -> u32 {
    let b = en.as_bytes();
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < b.len() {
        h ^= b[i] as u32;
        h = h.wrapping_mul(0x0100_0193);
        i += 1;
    }
    h
}
