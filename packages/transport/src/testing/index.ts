/** Test helpers (`@phoenix-overlay/transport/testing`): not part of the node's API. */
export { LocalCluster, type ClusterNode } from './local-cluster.ts'
/** Resuming a paused libp2p stream so that a pause made during the resume holds (the bench's pause/resume relay). */
export { resumeReading } from '../stream-resume.ts'
