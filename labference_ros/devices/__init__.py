"""Drivers for a real cell's instruments (the balance today).

Plain Python over the instrument's own interface (a serial port): no ROS, no
simulator, no task family. The nodes wrap them; tests drive them against the
emulators here, on a pseudo-terminal, exactly as they would drive the device.
"""
