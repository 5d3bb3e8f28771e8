-- Temporal keeps its own schemas beside the engine's database; auto-setup migrates them.
CREATE DATABASE temporal;
CREATE DATABASE temporal_visibility;
