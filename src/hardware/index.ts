// The hardware layer's public surface: codec, controller link, simulator and their errors.

export { HardwareError, HARDWARE_ERROR_STATUS, type HardwareErrorCode, type HardwareErrorDetails } from './errors.js'
export {
  STX,
  ETX,
  MAX_SEQ,
  DEFAULT_MAX_FRAME_BYTES,
  FRAME_KINDS,
  FrameDecoder,
  FrameFormatError,
  FrameTooLongError,
  encodeFrame,
  decodePayload,
  encodeArgs,
  decodeArgs,
  escapeValue,
  unescapeValue,
  nextSeq,
  type Frame,
  type FrameInput,
  type FrameKind,
  type FrameArgs,
  type FrameArgsInput,
  type FrameDecoderOptions,
  type DiscardReason
} from './codec.js'
export {
  ControllerLink,
  DEFAULT_LINK_TIMINGS,
  backoffDelay,
  eventProblem,
  EVENT_REQUIRED_ARGS,
  type ControllerConfig,
  type ControllerLinkOptions,
  type ControllerEvent,
  type ControllerState,
  type AcknowledgedCommand,
  type CommandResult,
  type SendOptions,
  type LinkEvents,
  type LinkStats,
  type LinkTimings,
  type Logger
} from './controller-link.js'
export {
  startSimulator,
  SimController,
  DEFAULT_SIMULATOR_TIMINGS,
  type Simulator,
  type SimulatorOptions,
  type SimulatorTimings,
  type SimControllerConfig,
  type SimControllerEvents,
  type SimMode,
  type SimModeOptions
} from './simulator.js'
export { runSimulateCommand, runControlLine, SIMULATE_USAGE, type SimulateIo } from './simulate-cli.js'
