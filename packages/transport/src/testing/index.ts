/** Test helpers (`@phoenix-overlay/transport/testing`): not part of the node's API. */
export { LocalCluster, type ClusterNode } from './local-cluster.ts'
