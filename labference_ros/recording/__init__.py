"""Recording of a run: rosbag2 (MCAP) per episode, replay audit, videos and
HDF5 demonstrations (paper 8.4). Pure Python (rosbags, h5py, imageio): only
nodes/recorder.py touches rclpy."""
