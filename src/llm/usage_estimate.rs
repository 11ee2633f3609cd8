//! Token counts when the provider reports none. Local servers (llama.cpp-style) ignore
//! `stream_options.include_usage`, which left sessions at 0 tokens: caps never stopped anything
//! and `insights` showed nothing. We count ourselves, by character class rather than a flat
//! chars/4 (which undercounts code and CJK several-fold): a Han/kana/hangul character is about
//! one token; a word about one per 6 letters; digits group by 3; punctuation runs pair up;
//! whitespace mostly merges into the next token. The caller marks such counts as estimated.

use crate::llm::{ChatRequest, Message, Usage};

/// Tokens each message costs beyond its text (role and separators), and the reply's priming.
const MESSAGE_OVERHEAD: u64 = 4;
const REPLY_PRIMING: u64 = 3;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Word,
    Digit,
    Punct,
    Space,
    Newline,
    /// One token per character: CJK, emoji, other symbols.
    Single,
}

fn class(c: char) -> Class {
    match c {
        '\n' | '\r' => Class::Newline,
        c if c.is_whitespace() => Class::Space,
        c if c.is_ascii_digit() => Class::Digit,
        c if c.is_ascii_alphabetic() || c == '_' => Class::Word,
        c if c.is_ascii() => Class::Punct,
        '\u{3040}'..='\u{30ff}'
        | '\u{3400}'..='\u{4dbf}'
        | '\u{4e00}'..='\u{9fff}'
        | '\u{ac00}'..='\u{d7af}'
        | '\u{f900}'..='\u{faff}'
        | '\u{ff00}'..='\u{ffef}'
        | '\u{20000}'..='\u{2ffff}' => Class::Single,
        c if c.is_alphabetic() => Class::Word,
        _ => Class::Single,
    }
}

/// Estimated tokens of a text.
pub fn text_tokens(text: &str) -> u64 {
    let mut total = 0u64;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let k = class(c);
        let mut run = 1u64;
        if k != Class::Single {
            while chars.peek().is_some_and(|n| class(*n) == k) {
                chars.next();
                run += 1;
            }
        }
        total += match k {
            Class::Word => run.div_ceil(6),
            Class::Digit => run.div_ceil(3),
            Class::Punct => run.div_ceil(2),
            // One space joins the next word; indentation runs are a few tokens.
            Class::Space => (run - 1).div_ceil(8),
            Class::Newline => 1,
            Class::Single => 1,
        };
    }
    total
}

fn message_tokens(m: &Message) -> u64 {
    MESSAGE_OVERHEAD
        + m.wire_content().map_or(0, text_tokens)
        + m.reasoning.as_deref().map_or(0, text_tokens)
        + m.tool_calls
            .iter()
            .map(|c| text_tokens(&c.name) + text_tokens(&c.arguments) + MESSAGE_OVERHEAD)
            .sum::<u64>()
}

/// Estimated input tokens of a request: system prompt, messages and tool schemas.
pub fn request_tokens(request: &ChatRequest) -> u64 {
    let system = if request.system.is_empty() {
        0
    } else {
        MESSAGE_OVERHEAD + text_tokens(&request.system)
    };
    let tools: u64 = request
        .tools
        .iter()
        .map(|t| {
            text_tokens(&t.name)
                + text_tokens(&t.description)
                + text_tokens(&t.parameters.to_string())
        })
        .sum();
    system + request.messages.iter().map(message_tokens).sum::<u64>() + tools + REPLY_PRIMING
}

/// The usage of one call whose provider reported none: the request as input, the answer
/// (text, reasoning and tool calls) as output.
pub fn estimate(request: &ChatRequest, answer: &Message) -> Usage {
    let output = message_tokens(answer).saturating_sub(MESSAGE_OVERHEAD);
    let reasoning = answer.reasoning.as_deref().map_or(0, text_tokens);
    Usage {
        input_tokens: request_tokens(request),
        output_tokens: output.max(1),
        reasoning_tokens: reasoning,
        ..Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_prose_is_near_four_chars_per_token() {
        let text = "The quick brown fox jumps over the lazy dog and keeps running far away.";
        let t = text_tokens(text);
        // 14 words; a real tokenizer says 15.
        assert!((13..=18).contains(&t), "{t}");
    }

    #[test]
    fn cjk_counts_per_character() {
        let text = "今天天气很好，我们去公园散步吧。";
        let t = text_tokens(text);
        assert!(t >= 14, "chars/4 would say 4; got {t}");
    }

    #[test]
    fn code_counts_more_than_chars_over_four_would_suggest_for_symbols() {
        let code =
            "fn main() {\n    let x: Vec<u8> = vec![1, 2, 3];\n    println!(\"{x:?}\");\n}\n";
        let t = text_tokens(code);
        assert!(t as usize >= code.len() / 4, "{t}");
        assert!((t as usize) < code.len(), "{t}");
        assert_eq!(text_tokens(""), 0);
    }

    #[test]
    fn an_answer_costs_at_least_one_token_and_the_request_counts_everything() {
        let request = ChatRequest {
            model: "m".into(),
            system: "You are helpful.".into(),
            messages: vec![Message::user("hello there")],
            tools: Vec::new(),
            max_tokens: None,
            temperature: None,
        };
        let u = estimate(
            &request,
            &Message::assistant(Some(String::new()), Vec::new()),
        );
        assert_eq!(u.output_tokens, 1);
        assert!(u.input_tokens > text_tokens("You are helpful.hello there"));
    }
}
