export { createAgentService } from './agents/agent-service.js';
export type {
  Agent,
  AgentDisposal,
  AgentErrorReporter,
  AgentErrorStage,
  AgentOptions,
  AgentPhase,
  AgentService,
  AgentServiceOptions,
  AgentServiceStats,
  AgentStatus,
  Completion,
  Drainable,
  InboxItem,
  Notice,
  Turn,
  TurnInbox,
  TurnReason,
  WakePolicy,
} from './agents/agent-types.js';
export { TetherError, type TetherErrorCode } from './errors.js';
export type {
  JobExit,
  JobHooks,
  JobInfo,
  JobPage,
  JobRunContext,
  JobService,
  JobServiceStats,
  JobSpec,
  JobState,
  JobSubscription,
  KillResult,
} from './jobs/job-types.js';
export { readFactLog } from './mirror/log-source.js';
export { createMirror } from './mirror/mirror-server.js';
export type { FactSource, Mirror, MirrorOptions } from './mirror/mirror-types.js';
export type { FactLog, LogOption } from './observe/fact-log.js';
export {
  FACT_VERSION,
  type Fact,
  type FactBody,
  type FactType,
  type ObserveOptions,
} from './observe/fact-types.js';
export type { OwnerIdentity, OwnerLease } from './owners/owner-registry.js';
export type { AgentOwnerToken } from './owners/owner-token.js';
export type { PersistOptions } from './persist/persist-options.js';
export type { PersistedTree } from './persist/persisted-tree.js';
export type { SandboxStats } from './placement/placement.js';
export type { PlacementOptions } from './placement/placement-types.js';
export { PolicyDeniedError } from './policy/policy-denied.js';
export type {
  Approval,
  Approver,
  DecidedBy,
  Policy,
  PolicyAction,
  PolicyCaller,
  PolicyDecision,
  PolicyDecisionFact,
  PolicyRequest,
  PolicyRule,
  SimpleCommand,
} from './policy/policy-types.js';
export type { ContainerPlacement, PlacedContainer } from './remote/container-placement.js';
export {
  type ContainerProviderOptions,
  createContainerProvider,
} from './remote/container-provider.js';
export {
  createExecProvider,
  type ExecProvider,
  type ExecProviderOptions,
  type ExecTransportOptions,
} from './remote/exec-provider.js';
export type { RemoteProvider } from './remote/helper-provider.js';
export { createKubernetesProvider, type KubernetesProviderOptions } from './remote/kubernetes-provider.js';
export type { PlacedOwner } from './remote/placed-owner.js';
export type { PlacedPod, PodPlacement } from './remote/pod-placement.js';
export { createSshProvider, type SshProvider, type SshProviderOptions } from './remote/ssh-provider.js';
export {
  type AdoptedSession,
  createRuntime,
  type OwnerService,
  type ReloadOptions,
  type Runtime,
  type RuntimeStats,
  type ShellService,
} from './runtime.js';
export type { RuntimeOptions } from './runtime-options.js';
export { type Confinement, resolveConfinement } from './sandbox/sandbox-options.js';
export {
  createSandboxProvider,
  type SandboxProvider,
  type SandboxProviderOptions,
} from './sandbox/sandbox-provider.js';
export {
  DEFAULT_DENY_READ,
  type IsolationMode,
  SANDBOX_UID,
  type SandboxDescription,
  type SandboxMode,
  type SandboxNetwork,
  type SandboxOptions,
} from './sandbox/sandbox-types.js';
export type { ShellRequest, ShellResult } from './shell/shell-types.js';
export type { RecoveredContainer } from './subprocess/containment/container-sweep.js';
export type { ContainmentMode } from './subprocess/containment/containment-types.js';
export type { PodPlace } from './subprocess/containment/kube-api.js';
export type { RecoveredPod } from './subprocess/containment/pod-sweep.js';
export type { RecoveredRuntime } from './subprocess/containment/reaper.js';
export { type EnvPolicy, type IdentitySnapshot, identityEnv } from './subprocess/env.js';
export {
  createLocalProvider,
  type LocalProvider,
  type LocalProviderOptions,
} from './subprocess/local-provider.js';
export type {
  InputProbe,
  InputWaitProof,
  ProcessIdentity,
  StdioDisposition,
  SubprocessExit,
  SubprocessHandle,
  SubprocessLoss,
  SubprocessProvider,
  SubprocessSpawnSpec,
  TerminalHandle,
  TerminalHandleExit,
  TerminalSignalTarget,
  TerminalSpawnSpec,
  TreeKillVerdict,
  TreeProof,
} from './subprocess/types.js';
export type {
  PersistentBash,
  PersistentBashResult,
  PersistentBashRunOptions,
} from './terminals/persistent-bash.js';
export type {
  TerminalChunk,
  TerminalCommandResult,
  TerminalExit,
  TerminalInfo,
  TerminalOpenOptions,
  TerminalScreen,
  TerminalSendResult,
  TerminalService,
  TerminalServiceStats,
  TerminalSignal,
  TerminalSubscription,
  WaitReason,
} from './terminals/terminal-types.js';
export { bindTools, createToolRegistry, DEFAULT_OUTPUT_BUDGET_CHARS } from './tools/tool-registry.js';
export type {
  OwnerTools,
  ToolCallOptions,
  ToolDescriptor,
  ToolErrorCode,
  ToolInputSchema,
  ToolRegistry,
  ToolRegistryOptions,
  ToolResult,
  ToolRuntime,
} from './tools/tool-types.js';
