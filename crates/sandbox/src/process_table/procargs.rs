//! Reading a `KERN_PROCARGS2` buffer (macOS's `sysctl` for a process's arguments and
//! environment): plain parsing, so it is compiled and tested on every platform, and used
//! by `macos.rs`.
#![cfg_attr(not(target_os = "macos"), allow(dead_code))]

/// The environment part of a `KERN_PROCARGS2` buffer.
pub(super) fn environment_of(buffer: &[u8]) -> Vec<u8> {
    let Some((count, rest)) = buffer.split_first_chunk::<4>() else {
        return Vec::new();
    };
    let arguments = usize::try_from(i32::from_ne_bytes(*count)).unwrap_or(0);
    // The executable's path, then the NULs that pad it.
    let Some(path_end) = rest.iter().position(|b| *b == 0) else {
        return Vec::new();
    };
    let mut at = path_end;
    while rest.get(at) == Some(&0) {
        at += 1;
    }
    // Skip the arguments.
    for _ in 0..arguments {
        match rest[at..].iter().position(|b| *b == 0) {
            Some(end) => at += end + 1,
            None => return Vec::new(),
        }
    }
    // The environment: strings up to the first empty one.
    let mut end = at;
    while let Some(len) = rest[end..].iter().position(|b| *b == 0)
        && len > 0
    {
        end += len + 1;
    }
    rest[at..end].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer as the kernel lays it out: the argument count, the executable's path and
    /// its padding, the arguments, the environment, then what follows it.
    fn buffer(arguments: &[&str], environment: &[&str]) -> Vec<u8> {
        let mut out = i32::try_from(arguments.len())
            .unwrap_or(0)
            .to_ne_bytes()
            .to_vec();
        out.extend_from_slice(b"/bin/bash\0\0\0\0");
        for text in arguments.iter().chain(environment) {
            out.extend_from_slice(text.as_bytes());
            out.push(0);
        }
        out.push(0);
        out.extend_from_slice(b"ptr_munge=\0main_stack=\0");
        out
    }

    #[test]
    fn the_environment_is_what_follows_the_arguments_up_to_the_empty_string() {
        let found = environment_of(&buffer(
            &["bash", "-c", "sleep 9 &"],
            &["HOME=/Users/me", "WONOPCODE_CALL_ID=12-3"],
        ));
        assert_eq!(found, b"HOME=/Users/me\0WONOPCODE_CALL_ID=12-3\0");
    }

    #[test]
    fn a_short_or_cut_buffer_gives_nothing() {
        assert!(environment_of(b"\x01").is_empty());
        assert!(environment_of(&buffer(&["a", "b"], &[])[..18]).is_empty());
        assert!(environment_of(&buffer(&["bash"], &[])).is_empty());
    }
}
