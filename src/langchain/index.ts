/**
 * workmem/langchain: workmem inside a LangChain.js v1 agent (createAgent): an agent
 * middleware and workmem's tools over one session. A separate entry, so that `workmem`
 * itself never loads LangChain (`langchain` and `@langchain/core` are optional peer dependencies).
 */
export { createWorkmem } from './workmemMiddleware.js';
export type { Workmem, WorkmemOptions } from './workmemMiddleware.js';
