DROP TABLE IF EXISTS workspace_files;
