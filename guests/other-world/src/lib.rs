//! Test guest of another world entirely, which the host must refuse.

wit_bindgen::generate!({ path: "wit", world: "calculator" });

struct Calculator;

impl Guest for Calculator {
    fn add(a: u32, b: u32) -> u32 {
        a.wrapping_add(b)
    }
}

export!(Calculator);
