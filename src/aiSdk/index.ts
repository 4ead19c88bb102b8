/**
 * workmem/ai-sdk: workmem's `llm` over any Vercel AI SDK language model (aiSdkModel), and
 * workmem inside an AI SDK agent loop (createWorkmem: a middleware and tools). A separate
 * entry, so that `workmem` itself never loads the AI SDK (an optional peer dependency).
 */
export { aiSdkModel } from './aiSdkModel.js';
export type { AiSdkModel, AiSdkModelOptions } from './aiSdkModel.js';
export { createWorkmem } from './workmemMiddleware.js';
export type { Workmem, WorkmemOptions } from './workmemMiddleware.js';
