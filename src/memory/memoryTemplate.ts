/**
 * The overview.md a new session starts with: five sections with guidance comments
 * (docs/design.md §2.1), in English or in Chinese.
 */
import type { MemoryHealth } from '../events.js';

export type MemoryLanguage = 'en' | 'zh';

const EN = `# Working Memory

<!--
This is your external memory. Its content is loaded into your prompt on every request.
You decide what to remember and what to drop.

Your context is limited. You decide:
- when to compact the conversation (compact_history)
- what to keep here
- what to archive to working-memory/detail/

Update this file with the write or edit tool: working-memory/overview.md
On the next request you will see what you wrote. This is YOUR memory.
-->

## Current task
<!-- What did the user ask for? Where are you now? -->


## Key decisions
<!-- What did you decide, and why? -->


## Known facts
<!-- Facts the user stated, project structure, names, numbers, paths -->


## Open questions
<!-- Problems or blockers still to resolve -->


## Recent actions
<!-- The last few steps (optional, for a quick recap) -->


<!--
Tips:
- context_meta (at the end of each request) shows your token use
- put detailed notes in working-memory/detail/ and read them when needed
- keep this file under 5 KB
-->
`;

const ZH = `# Working Memory

<!--
这是你的外部记忆。每次请求时，这个文件的内容会被加载到你的 prompt 中。
你自己决定记住什么、丢弃什么。

你的 context 是有限的。你需要自己决定：
- 什么时候压缩（compact_history）
- 记住什么信息
- 丢弃什么历史

使用 write 或 edit tool 更新此文件：working-memory/overview.md
下次请求时，你会看到自己写的内容。

这是 YOUR memory。你控制你看到的内容。
-->

## 当前任务
<!-- 用户让你做什么？当前进度？ -->


## 关键决策
<!-- 你做过什么重要决定？为什么？ -->


## 已知信息
<!-- 项目结构、技术栈、关键文件等 -->


## 待解决
<!-- 待处理的问题或阻塞项 -->


## 最近操作
<!-- 最近几步做了什么（可选，用于快速回顾） -->


<!--
提示：
- 查看 context_meta（每次自动注入）了解 token 使用情况
- 需要保存详细内容时，写入 working-memory/detail/ 目录
- 文件路径相对于 session 目录
-->
`;

export function overviewTemplate(language: MemoryLanguage = 'en'): string {
  return language === 'zh' ? ZH : EN;
}

export type { MemoryHealth };

const TEMPLATES = [normalise(EN), normalise(ZH)];

export function memoryHealth(content: string): MemoryHealth {
  const real = content
    .replace(/<!--[\s\S]*?(-->|$)/g, '')
    .replace(/^\s*#.*$/gm, '')
    .replace(/\s+/g, '');
  return {
    differsFromTemplate: !TEMPLATES.includes(normalise(content)),
    contentChars: [...real].length,
  };
}

function normalise(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
