/**
 * workmem/ai-sdk: workmem's `llm` over any Vercel AI SDK language model. A separate entry,
 * so that `workmem` itself never loads the AI SDK (an optional peer dependency).
 */
export { aiSdkModel } from './aiSdkModel.js';
export type { AiSdkModel, AiSdkModelOptions } from './aiSdkModel.js';
