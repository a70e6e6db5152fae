/** The CRC16 slot (0–16383) Redis Cluster puts a key in; ioredis' own dependency, untyped. */
declare module 'cluster-key-slot' {
  function calculateSlot(key: string | Buffer): number;
  export default calculateSlot;
}
