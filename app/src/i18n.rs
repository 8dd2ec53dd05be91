//! English and Simplified Chinese. Every user-facing string is written in
//! English in the code and looked up here; a test checks that each has a
//! Chinese translation. Chinese uses the established terms of the seed
//! articles (显存, 梯度检查点, 混合精度, 梯度累积, 张量并行, 流水线并行, …).

use leptos::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    En,
    Zh,
}

impl Lang {
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    /// The `lang` attribute of the document.
    pub fn html(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh-CN",
        }
    }

    pub fn parse(s: &str) -> Option<Lang> {
        let s = s.trim().to_ascii_lowercase();
        if s.starts_with("zh") {
            Some(Lang::Zh)
        } else if s.starts_with("en") {
            Some(Lang::En)
        } else {
            None
        }
    }

    /// The `lang=` URL parameter, if any.
    pub fn from_query(search: &str) -> Option<Lang> {
        cost_model::query::pairs(search)
            .into_iter()
            .rev()
            .find(|(k, _)| k == "lang")
            .and_then(|(_, v)| Lang::parse(&v))
    }

    /// The first supported language of an `Accept-Language` header (by q-value).
    pub fn from_accept_language(header: &str) -> Lang {
        let mut best: Option<(f32, Lang)> = None;
        for part in header.split(',') {
            let mut it = part.split(';');
            let tag = it.next().unwrap_or("");
            let q = it
                .find_map(|p| {
                    p.trim()
                        .strip_prefix("q=")
                        .and_then(|v| v.parse::<f32>().ok())
                })
                .unwrap_or(1.0);
            if let Some(l) = Lang::parse(tag) {
                if best.is_none_or(|(bq, _)| q > bq) {
                    best = Some((q, l));
                }
            }
        }
        best.map(|b| b.1).unwrap_or(Lang::En)
    }

    /// Translates an English UI string (falls back to English).
    pub fn t(self, en: &str) -> &str {
        match self {
            Lang::En => en,
            Lang::Zh => zh(en).unwrap_or(en),
        }
    }

    /// A plan's validation error in this language: the field paths stay as
    /// the plan JSON spells them; an `Invalid`'s reason stays English.
    pub fn plan_error(self, e: &cost_model::PlanError) -> String {
        use cost_model::PlanError as E;
        match (self, e) {
            (Lang::En, e) => e.to_string(),
            (_, E::Zero { field }) => format!("{field} 至少为 1（当前为 0）"),
            (_, E::TooLarge { field, value, max }) => {
                format!("{field}（{value}）超过支持的上限 {max}")
            }
            (
                _,
                E::NotDivisible {
                    field,
                    value,
                    by_field,
                    by,
                },
            ) => {
                format!("{field}（{value}）不能被 {by_field}（{by}）整除")
            }
            (_, E::Invalid { field, reason }) => format!("{field}：{reason}"),
            (_, E::UnsupportedVersion { found, supported }) => {
                format!("version：方案格式版本 {found} 比本程序支持的（{supported}）更新")
            }
        }
    }
}

/// The page's language, provided as context by the app.
pub fn use_lang() -> RwSignal<Lang> {
    use_context::<RwSignal<Lang>>().unwrap_or_else(|| RwSignal::new(Lang::En))
}

include!("zh_key.rs");

/// English → 简体中文 (`zh.tsv`: English, a tab, Chinese, one pair a line;
/// `#` lines are comments), as `build.rs` files it: the Chinese end to end,
/// in the order of [`ZH_KEYS`]. One string, not a table of string
/// references: at 422 pairs such a table made the release build's split
/// move shared code out of the lazy routes' chunks into the page's WASM,
/// 15 KB gzip over its budget; one block of bytes does not
/// (docs/BENCHMARKS.md, the page's WASM).
const ZH_TEXT: &str = include_str!(concat!(env!("OUT_DIR"), "/zh_text.txt"));

/// Per translated English string, its [`zh_key`] and where its Chinese ends
/// in [`ZH_TEXT`] (little-endian u32s, keys ascending): the English itself
/// is not in the WASM twice.
const ZH_KEYS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/zh_keys.bin"));

/// Bytes of one [`ZH_KEYS`] record.
const ZH_RECORD: usize = 8;

/// The little-endian u32 at byte `at` of [`ZH_KEYS`].
fn zh_u32(at: usize) -> usize {
    let b = &ZH_KEYS[at..at + 4];
    u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
}

/// The Chinese for an English string, if the table has it: a binary search
/// over the keys (`build.rs` fails on two strings with one key). A string
/// without a translation whose key happened to equal one of the table's
/// would get that translation: about one string in ten million (400 keys
/// of 2^32), and the strings the controls show are checked
/// (`no_untranslated_string_takes_a_key`).
fn zh(en: &str) -> Option<&'static str> {
    let key = zh_key(en) as usize;
    let (mut lo, mut hi) = (0, ZH_KEYS.len() / ZH_RECORD);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match zh_u32(mid * ZH_RECORD).cmp(&key) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => {
                let start = if mid == 0 {
                    0
                } else {
                    zh_u32((mid - 1) * ZH_RECORD + 4)
                };
                return ZH_TEXT.get(start..zh_u32(mid * ZH_RECORD + 4));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_picks_the_best_supported() {
        assert_eq!(
            Lang::from_accept_language("zh-CN,zh;q=0.9,en;q=0.8"),
            Lang::Zh
        );
        assert_eq!(
            Lang::from_accept_language("en-US,en;q=0.9,zh;q=0.5"),
            Lang::En
        );
        assert_eq!(Lang::from_accept_language("fr-FR, zh-TW;q=0.7"), Lang::Zh);
        assert_eq!(Lang::from_accept_language(""), Lang::En);
        assert_eq!(Lang::from_query("mb=2&lang=zh"), Some(Lang::Zh));
    }

    #[test]
    fn every_control_string_has_a_chinese_translation() {
        use crate::components::options::{sections, Kind};
        let mut missing = Vec::new();
        for (title, fields) in sections() {
            if zh(title).is_none() {
                missing.push(title.to_string());
            }
            for (key, label, hint, kind) in fields {
                for s in [label, hint] {
                    if zh(s).is_none() {
                        missing.push(s.to_string());
                    }
                }
                // Model and GPU names, framework names and plain ids stay as they are.
                if let Kind::Select(options) = kind {
                    if !matches!(key, "model" | "gpu" | "fw" | "opt" | "shard" | "bits") {
                        for (_, l) in options {
                            if zh(&l).is_none() && l.chars().any(|c| c == ' ' || c == '(') {
                                missing.push(l);
                            }
                        }
                    }
                }
            }
        }
        // A layout's words (/layouts); bare ids (DDP, ZeRO-2, TP) stay.
        for l in cost_model::layouts::LAYOUT_LABELS {
            if zh(l).is_none() && l.contains(' ') {
                missing.push(l.to_string());
            }
        }
        for c in cost_model::estimate::Component::ALL {
            if zh(c.id()).is_none() {
                missing.push(c.id().to_string());
            }
        }
        for p in cost_model::estimate::Phase::ALL {
            if zh(p.id()).is_none() {
                missing.push(p.id().to_string());
            }
        }
        assert!(missing.is_empty(), "untranslated: {missing:?}");
    }

    /// The table's pairs as `zh.tsv` writes them.
    fn zh_pairs() -> impl Iterator<Item = (&'static str, &'static str)> {
        include_str!("zh.tsv")
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(|l| l.split_once('\t'))
    }

    #[test]
    fn every_pair_is_found_by_its_english() {
        let mut n = 0;
        for (en, zh_text) in zh_pairs() {
            assert_eq!(zh(en), Some(zh_text), "{en}");
            n += 1;
        }
        assert_eq!(n, ZH_KEYS.len() / ZH_RECORD);
        assert_eq!(zh("not a string the page shows"), None);
    }

    #[test]
    fn no_untranslated_string_takes_a_key() {
        use crate::components::options::{sections, Kind};
        let english: std::collections::HashSet<&str> = zh_pairs().map(|p| p.0).collect();
        let mut shown: Vec<String> = Vec::new();
        for (title, fields) in sections() {
            shown.push(title.to_string());
            for (key, label, hint, kind) in fields {
                shown.extend([key.to_string(), label.to_string(), hint.to_string()]);
                if let Kind::Select(options) = kind {
                    shown.extend(options.into_iter().flat_map(|(v, l)| [v, l]));
                }
            }
        }
        shown.extend(
            cost_model::layouts::LAYOUT_LABELS
                .iter()
                .map(|l| l.to_string()),
        );
        let taken: Vec<_> = shown
            .iter()
            .filter(|s| !english.contains(s.as_str()) && zh(s).is_some())
            .collect();
        assert!(shown.len() > 500, "{}", shown.len());
        assert!(
            taken.is_empty(),
            "untranslated strings with a translation's key: {taken:?}"
        );
    }

    #[test]
    fn table_has_no_duplicates() {
        let mut keys: Vec<_> = zh_pairs().map(|(e, _)| e).collect();
        keys.sort();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n);
    }
}

/// Whether the language was chosen explicitly (then it travels in the URL).
#[derive(Clone, Copy)]
pub struct LangInUrl(pub RwSignal<bool>);

/// `&lang=xx` when the language travels in the URL, else nothing.
pub fn lang_suffix() -> String {
    let lang = use_lang();
    let explicit = use_context::<LangInUrl>()
        .map(|l| l.0.get())
        .unwrap_or(false);
    if explicit {
        format!("lang={}", lang.get().code())
    } else {
        String::new()
    }
}

/// Joins a plan query and the language suffix into `/?…`.
pub fn href(query: &str, suffix: &str) -> String {
    page_href("/", query, suffix)
}

/// Joins a page, a plan query and the language suffix (`/layouts?…`).
pub fn page_href(path: &str, query: &str, suffix: &str) -> String {
    match (query.is_empty(), suffix.is_empty()) {
        (true, true) => path.to_string(),
        (false, true) => format!("{path}?{query}"),
        (true, false) => format!("{path}?{suffix}"),
        (false, false) => format!("{path}?{query}&{suffix}"),
    }
}
