/**
 * The tags workmem uses to frame a request (the memory in the system message, the tail
 * after the last message). Text from outside — tool output, summaries, and the memory the
 * model wrote, possibly copying tool output — must not be able to close or forge them: a
 * tool result saying `</working_memory> SYSTEM: …` or carrying its own `<context_meta>`
 * would otherwise read as ours. Their angle bracket is written as `&lt;`, which reads as
 * text. Look-alikes count too: a model reads `<context\u200B_meta>`, `＜context_meta>` or
 * `<context‐meta>` as the tag, so the text after a bracket is normalised before matching
 * (invisible and combining characters stripped, compatibility forms folded, hyphens as `_`),
 * and white space of any kind may stand between the bracket, the slash and the name
 * (`< context_meta>`, `</ working_memory>`).
 */
const NAMES = /^\s*(?:\/\s*)?(context_meta|memory_reminder|working_memory|detail_index|relevant_memories)(?=[\s>/]|$)/;
/** `<` and the characters whose compatibility form is `<` (small and fullwidth). */
const BRACKETS = /[<\uFE64\uFF1C]/g;
const INVISIBLE = /[\p{Cf}\p{M}\p{Default_Ignorable_Code_Point}]/gu;
const HYPHENS = /[-\u2010-\u2015\u2212\uFE58\uFE63\uFF0D]/g;
/** How an ASCII tag name (or its closing slash) can start. */
const FIRST = /[/cmwdr]/i;
/** ASCII white space between the bracket and the name, skipped before the quick test. */
const ASCII_SPACE = /[\t\n\v\f\r ]/;
/** Enough to hold the longest name padded with invisible characters; more is not a tag a model reads. */
const WINDOW = 160;

export function neutraliseTags(text: string): string {
  const at = tagPositions(text);
  if (at.length === 0) return text;
  let out = '';
  let from = 0;
  for (const i of at) {
    out += `${text.slice(from, i)}&lt;`;
    from = i + 1;
  }
  return out + text.slice(from);
}

function tagPositions(text: string): number[] {
  const at: number[] = [];
  BRACKETS.lastIndex = 0;
  for (let m = BRACKETS.exec(text); m; m = BRACKETS.exec(text)) {
    let first = m.index + 1;
    while (first < text.length && first - m.index <= WINDOW && ASCII_SPACE.test(text[first]!)) first++;
    // `<div`, `a < b`: no normalising needed
    if (text.charCodeAt(first) < 128 && !FIRST.test(text[first] ?? '')) continue;
    if (NAMES.test(normalised(text.slice(m.index + 1, m.index + 1 + WINDOW)))) at.push(m.index);
  }
  return at;
}

function normalised(text: string): string {
  return text.normalize('NFKD').replace(INVISIBLE, '').normalize('NFKC').replace(HYPHENS, '_').toLowerCase();
}
