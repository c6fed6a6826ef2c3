"""The run stream: events stored and published, their wire types, the WebSocket consumer."""
