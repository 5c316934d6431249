"""Device drivers and simulators: protocol codecs, transports and simulated devices."""
