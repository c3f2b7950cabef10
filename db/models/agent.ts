import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';
import type { AgentConfig, AgentStatus } from '../../domain/agents';

export class Agent extends Model<InferAttributes<Agent>, InferCreationAttributes<Agent>> {
  declare id: CreationOptional<number>;
  declare publicId: string;
  declare workspaceId: number;
  declare name: string;
  declare status: AgentStatus;
  /** The unpublished configuration that preview runs use. */
  declare draftConfig: AgentConfig;
  /** True once the draft differs from the published version. */
  declare draftChanged: CreationOptional<boolean>;
  declare publishedVersion: number;
  declare createdAt: CreationOptional<Date>;
  declare updatedAt: CreationOptional<Date>;

  static setup(sequelize: Sequelize): void {
    Agent.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        publicId: { type: DataTypes.TEXT, allowNull: false },
        workspaceId: { type: DataTypes.BIGINT, allowNull: false },
        name: { type: DataTypes.TEXT, allowNull: false },
        status: { type: DataTypes.TEXT, allowNull: false },
        draftConfig: { type: DataTypes.JSONB, allowNull: false },
        draftChanged: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
        publishedVersion: { type: DataTypes.INTEGER, allowNull: false },
        createdAt: DataTypes.DATE,
        updatedAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'agents', underscored: true },
    );
  }
}

export class AgentVersion extends Model<InferAttributes<AgentVersion>, InferCreationAttributes<AgentVersion>> {
  declare id: CreationOptional<number>;
  declare agentId: number;
  declare version: number;
  declare config: AgentConfig;
  declare createdAt: CreationOptional<Date>;

  static setup(sequelize: Sequelize): void {
    AgentVersion.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        agentId: { type: DataTypes.BIGINT, allowNull: false },
        version: { type: DataTypes.INTEGER, allowNull: false },
        config: { type: DataTypes.JSONB, allowNull: false },
        createdAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'agent_versions', underscored: true, updatedAt: false },
    );
  }
}
