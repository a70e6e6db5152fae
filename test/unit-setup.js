// The unit tier runs without infrastructure: whatever the machine has, every infrastructure URL
// points at a closed loopback port (port 1: nothing listens there), and test-kit's `infraUrls()`
// refuses (TEST_TIER), so a unit test that reaches for Redis, RabbitMQ or the MongoDB-wire server
// fails here as it would on a machine without them.
process.env.TEST_TIER = 'unit';
process.env.REDIS_URL = 'redis://127.0.0.1:1';
process.env.AMQP_URL = 'amqp://guest:guest@127.0.0.1:1';
process.env.MONGO_URL = 'mongodb://127.0.0.1:1';
