//! Guest loop names as `&'static str`, which `AgentLoop::name` returns. Each
//! distinct name is allocated once for the life of the process, however often guests with
//! that name are loaded (hot reload, validation, every spawn of a new module), so loading
//! never grows memory by itself.

use std::collections::HashSet;
use std::sync::OnceLock;

use parking_lot::Mutex;

/// The one `'static` copy of `name`.
pub(crate) fn interned(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Default::default).lock();
    if let Some(known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::interned;

    #[test]
    fn a_name_is_allocated_once() {
        let first = interned("reviewer");
        let again = interned(&String::from("reviewer"));
        assert!(std::ptr::eq(first, again));
        assert_ne!(interned("coder"), first);
    }
}
