/**
 * workmem/testing: a test server (Chat Completions, the Responses API, Anthropic's Messages
 * API) and stand-in models, for our tests, the demo, and anyone's own tests without an API key.
 */
export { startTestServer } from './testServer.js';
export type {
  TestServer,
  TestServerOptions,
  RecordedRequest,
  Fault,
  FaultPlan,
  PromptCaching,
  PromptCacheOptions,
  ProtocolName,
} from './testServer.js';
export { scripted } from './scripted.js';
export type { ScriptedResponse } from './scripted.js';
export { protocolFollower, statedFacts } from './protocolFollower.js';
export type { ProtocolFollowerOptions, Recall } from './protocolFollower.js';
export { policyModel } from './policyModel.js';
export type { PolicyModelOptions } from './policyModel.js';
export type { ChatRequest, Policy, PolicyReply, PolicyContext, WireTool } from './wire.js';
export { scriptedModel } from '../llm/scriptedModel.js';
export { BEHAVIOUR_PROFILES, behaviourProfile, diligent, lazy, forgetful, eager, sloppy, realistic } from './behaviourProfiles.js';
export { NOLIMA_CURVES, NOLIMA_LENGTHS, DEFAULT_RECALL_CURVE, recallProbability, retention } from './recallCurves.js';
export type { RecallCurve, RecallCurveName } from './recallCurves.js';
export type { BehaviourProfile } from './behaviourProfiles.js';
