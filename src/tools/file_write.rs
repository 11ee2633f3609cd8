//! The `write_file` tool: replaces (or creates) a whole file atomically, creating parent
//! directories. A crash mid-write leaves the old file or the new one, never a torn one.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::file_common;
use crate::tools::file_path::{self, Access, FilePath};
use crate::tools::registry::{ToolContext, ToolError, TypedTool};

pub struct WriteFile;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    pub path: String,
    /// Full new file content
    pub content: String,
}

impl TypedTool for WriteFile {
    type Args = WriteFileArgs;
    const NAME: &'static str = "write_file";
    const TOOLSET: &'static str = "file";
    const DESCRIPTION: &'static str = "Create or overwrite a file with the given content (parent dirs are created). Use patch for small edits.";

    async fn run(&self, args: WriteFileArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let (path, note) = file_path::prepare_write(ctx, &args.path, Access::Write).await?;
        // An editor (ACP) reviews edits before they happen.
        if let crate::security::approval::Verdict::Blocked(why) = ctx
            .approvals
            .check_edit("write_file", &path.resolved, ctx.prompt.as_ref())
            .await
        {
            return Err(ToolError::Respond(why));
        }
        let result = match ctx.scratch.files.writer() {
            // The editor writes its buffer (the checks and the checkpoint above still ran).
            Some(editor) => match editor.write_text(&path.resolved, &args.content).await {
                Ok(()) => Ok(written(&path, &args.content)),
                Err(e) => Err(ToolError::Respond(format!(
                    "cannot write {} through {}: {e}",
                    path.shown,
                    editor.name()
                ))),
            },
            None => file_common::blocking(move || write(&path, &args.content)).await,
        };
        file_path::with_note(result, note)
    }
}

crate::register_tool!(WriteFile);

fn write(path: &FilePath, content: &str) -> Result<String, ToolError> {
    let shown = path.shown.as_str();
    let target = &path.resolved;
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            ToolError::Respond(file_common::io_message(
                "create the parent directory of",
                shown,
                &e,
            ))
        })?;
    }
    crate::util::atomic_write(target, content.as_bytes())
        .map_err(|e| ToolError::Respond(file_common::io_message("write", shown, &e)))?;
    Ok(written(path, content))
}

/// What the model is told after `content` was written to `path`.
fn written(path: &FilePath, content: &str) -> String {
    let shown = path.shown.as_str();
    let lines = content.lines().count();
    format!(
        "{} {shown}: {} bytes, {lines} line{}.",
        if path.existed() {
            "Overwrote"
        } else {
            "Created"
        },
        content.len(),
        if lines == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use crate::tools::test_support::env;
    use serde_json::json;

    #[tokio::test]
    async fn creates_parents_and_reports_size() {
        let t = env();
        let out = t
            .ok(
                "write_file",
                json!({"path": "a/b/c.txt", "content": "one\ntwo\n"}),
            )
            .await;
        assert_eq!(out, "Created a/b/c.txt: 8 bytes, 2 lines.");
        assert_eq!(
            std::fs::read_to_string(t.path("a/b/c.txt")).unwrap(),
            "one\ntwo\n"
        );
    }

    #[tokio::test]
    async fn overwrites_atomically_without_leftovers() {
        let t = env();
        let p = t.write("d/f.txt", "old content");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        }
        let out = t
            .ok("write_file", json!({"path": "d/f.txt", "content": "new"}))
            .await;
        assert!(out.starts_with("Overwrote"), "{out}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        // Only the target remains: the temp file was renamed over it.
        let names: Vec<_> = std::fs::read_dir(t.path("d")).unwrap().flatten().collect();
        assert_eq!(names.len(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o640);
        }
    }

    #[tokio::test]
    async fn refuses_directories_and_file_parents() {
        let t = env();
        std::fs::create_dir(t.path("dir")).unwrap();
        let err = t
            .err("write_file", json!({"path": "dir", "content": "x"}))
            .await;
        assert!(err.contains("existing directory"), "{err}");
        assert!(t.path("dir").is_dir());

        t.write("file", "x");
        let err = t
            .err(
                "write_file",
                json!({"path": "file/inner.txt", "content": "x"}),
            )
            .await;
        assert!(err.contains("is a file, not a directory"), "{err}");

        let err = t.err("write_file", json!({"path": "x.txt"})).await;
        assert!(err.contains("content"), "{err}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn writing_through_a_symlink_keeps_the_link() {
        let t = env();
        let real = t.write("real.txt", "old");
        std::os::unix::fs::symlink("real.txt", t.path("link.txt")).unwrap();
        t.ok("write_file", json!({"path": "link.txt", "content": "new"}))
            .await;
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        let meta = std::fs::symlink_metadata(t.path("link.txt")).unwrap();
        assert!(meta.file_type().is_symlink());
    }

    #[tokio::test]
    async fn absolute_paths_and_empty_content() {
        let t = env();
        let abs = t.dir.path().join("elsewhere.txt");
        let out = t
            .ok(
                "write_file",
                json!({"path": abs.to_str().unwrap(), "content": ""}),
            )
            .await;
        assert!(out.contains("0 bytes, 0 lines"), "{out}");
        assert!(abs.is_file());
    }
}
