"""The cell description (labference_ros.cell) built as MuJoCo models: the Panda with
its grip site and wrist camera (panda_model) and the scene every cell shares
(scene_base). The simulator's scene builders and the motion skills' IK use them;
the cell description itself stays plain data, free of MuJoCo."""
