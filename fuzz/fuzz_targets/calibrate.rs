//! Any bytes as a calibration file: decoded as `memplan calibrate` does, then
//! every case predicted. Must return a report or an error, never panic.
#![no_main]
use cost_model::calibrate;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (text, _) = calibrate::decode_case_file(data);
    if let Ok(r) = calibrate::calibrate(&text) {
        let _ = calibrate::markdown(&r);
    }
});
