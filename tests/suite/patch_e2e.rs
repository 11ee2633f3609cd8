//! The `patch` tool through the real binary: a whitespace-tolerant match keeps the file's own
//! indentation (a 4-space Python file, a tab Makefile) and an `old_string` whose newlines arrived
//! as `\n` escapes still matches (issue 14).

use serde_json::json;

use crate::support::harness::{TestEnv, stderr};
use crate::support::mock_llm::{MockLlm, Reply};

/// Runs one `-z` turn in which the model sends `args` to `patch`, then answers "done".
fn patch_once(env: &TestEnv, args: serde_json::Value) -> String {
    let mock = MockLlm::with_script([
        Reply::tool_call("call_1", "patch", args),
        Reply::text("done"),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .args(["-z", "edit the file"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let msgs = mock.requests()[1]["messages"].as_array().cloned().unwrap();
    msgs.iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str().map(str::to_string))
        .unwrap_or_default()
}

#[test]
fn python_block_keeps_four_space_levels() {
    let env = TestEnv::new();
    let p = env.write(
        "calc.py",
        "def total(items):\n    result = 0\n    for item in items:\n        result += item\n    return result\n",
    );
    // The model wrote the block with 2-space indentation.
    let result = patch_once(
        &env,
        json!({
            "path": "calc.py",
            "old_string": "  for item in items:\n    result += item",
            "new_string": "  for item in items:\n    if item > 0:\n      result += item",
        }),
    );
    assert!(result.contains("Patched calc.py"), "{result}");
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "def total(items):\n    result = 0\n    for item in items:\n        if item > 0:\n            result += item\n    return result\n"
    );
}

#[test]
fn makefile_recipe_keeps_tabs() {
    let env = TestEnv::new();
    let p = env.write(
        "Makefile",
        "build:\n\tcc -o app main.c\n\ntest: build\n\t./app --self-test\n",
    );
    let result = patch_once(
        &env,
        json!({
            "path": "Makefile",
            "old_string": "build:\n    cc -o app main.c",
            "new_string": "build:\n    cc -Wall -o app main.c\n    strip app",
        }),
    );
    assert!(result.contains("Patched Makefile"), "{result}");
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "build:\n\tcc -Wall -o app main.c\n\tstrip app\n\ntest: build\n\t./app --self-test\n"
    );
}

#[test]
fn escaped_newline_old_string_matches() {
    let env = TestEnv::new();
    let p = env.write("greet.py", "def greet():\n    print('hi')\n");
    let result = patch_once(
        &env,
        json!({
            "path": "greet.py",
            "old_string": "def greet():\\n    print('hi')",
            "new_string": "def greet():\\n    print('hello')",
        }),
    );
    assert!(result.contains("as newlines"), "{result}");
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "def greet():\n    print('hello')\n"
    );
}
